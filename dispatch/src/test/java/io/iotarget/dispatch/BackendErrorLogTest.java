package io.iotarget.dispatch;

import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.ErrnoException;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.ResourceBundle;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A failing disk fails thousands of requests a second; the log gets a few lines and a count. */
class BackendErrorLogTest {
    private static class Lines implements System.Logger {
        final List<String> lines = new ArrayList<>();

        @Override
        public String getName() {
            return "test";
        }

        @Override
        public boolean isLoggable(Level level) {
            return true;
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
            lines.add(msg);
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String format, Object... params) {
            lines.add(format);
        }

        @Override
        public void log(Level level, Supplier<String> msgSupplier) {
            lines.add(msgSupplier.get());
        }
    }

    @Test
    void shouldLogAFewLinesPerSecondThenHowManyWentUnlogged() {
        ManualClock clock = new ManualClock(0);
        Lines log = new Lines();
        Device device = new Device(0, new DeviceNumber(259, 3), "disk3", 1 << 30, 4096, false, 4096);
        BackendErrorLog errors = new BackendErrorLog(device, clock, log);
        IoRequest io = new IoRequest().set(IoOp.WRITE, 0, 8192, 4096, null);
        ErrnoException enospc = new ErrnoException("io_uring write", BackendErrors.ENOSPC);
        for (int i = 0; i < 1000; i++) {
            errors.report(io, BackendErrors.ENOSPC, enospc);
            clock.advance(500_000);                 // 1000 failures in 0.5 s
        }
        assertEquals(BackendErrorLog.LINES_PER_SECOND, log.lines.size());
        assertEquals("backend error on disk3 (259:3): WRITE offset=8192 length=4096: io_uring write failed: ENOSPC (28)",
                log.lines.getFirst());
        clock.advance(600_000_000);                 // a new second
        errors.report(io, BackendErrors.ENOSPC, enospc);
        assertEquals(BackendErrorLog.LINES_PER_SECOND + 2, log.lines.size());
        assertEquals("995 more backend error(s) on disk3 (259:3) not logged", log.lines.get(BackendErrorLog.LINES_PER_SECOND));
        assertTrue(log.lines.getLast().startsWith("backend error on disk3"));
        errors.report(io, BackendErrors.EIO, new java.io.EOFException("read past the end"));
        assertEquals("backend error on disk3 (259:3): WRITE offset=8192 length=4096: EIO (5): read past the end", log.lines.getLast(),
                "a failure without an errno is named EIO");
        errors.flush();
        assertEquals(BackendErrorLog.LINES_PER_SECOND + 3, log.lines.size(), "nothing left unlogged");
    }

    @Test
    void shouldLoseTheLineNotTheCallerWhenLoggingThrows() {
        ManualClock clock = new ManualClock(0);
        Lines broken = new Lines() {
            @Override
            public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
                throw new NoClassDefFoundError("sun/util/calendar/ZoneInfoFile");
            }
        };
        Device device = new Device(0, new DeviceNumber(259, 3), "disk3", 1 << 30, 4096, false, 4096);
        BackendErrorLog errors = new BackendErrorLog(device, clock, broken);
        IoRequest io = new IoRequest().set(IoOp.READ, 0, 0, 4096, null);
        assertDoesNotThrow(() -> {
            for (int i = 0; i < 2 * BackendErrorLog.LINES_PER_SECOND; i++) {
                errors.report(io, BackendErrors.EIO, new ErrnoException("io_uring read", BackendErrors.EIO));
            }
            errors.flush();
        }, "the request being failed must still complete");
    }
}
