package io.iotarget.testkit;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * What the server logs under one logger name while it is open: a test's view of lines the
 * server writes (System.Logger goes to java.util.logging here). Open it before the action,
 * close it after (try-with-resources or an @AfterEach). Records arrive on the server's
 * threads; any thread may read them.
 */
public final class LogCapture extends Handler implements AutoCloseable {
    private final Logger logger;
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();

    /** Starts capturing what is logged under {@code loggerName} (a class's name, as the server's loggers are named). */
    public LogCapture(String loggerName) {
        this.logger = Logger.getLogger(loggerName);
        logger.addHandler(this);
    }

    @Override
    public void publish(LogRecord record) {
        records.add(record);
    }

    /** Every record so far, oldest first. */
    public List<LogRecord> records() {
        return List.copyOf(records);
    }

    /** Every record's message (unformatted) so far, oldest first. */
    public List<String> messages() {
        return records.stream().map(LogRecord::getMessage).toList();
    }

    /**
     * How many messages end with {@code text}, once {@code count} of them do or 10 s have
     * passed: for lines a server thread writes after the client's action returned.
     */
    public long await(String text, int count) throws InterruptedException {
        Await.within(Duration.ofSeconds(10), () -> matching(text) >= count);
        return matching(text);
    }

    private long matching(String text) {
        return messages().stream().filter(m -> m.endsWith(text)).count();
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        logger.removeHandler(this);
    }
}
