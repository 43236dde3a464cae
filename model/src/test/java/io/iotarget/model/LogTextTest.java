package io.iotarget.model;

import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.ResourceBundle;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

/** Client text in log lines: escaped so that it cannot make a line of its own, clipped so that it cannot fill the log. */
class LogTextTest {
    /** A logger that keeps what it is given. */
    private static final class Lines implements System.Logger {
        final List<String> messages = new ArrayList<>();
        final List<Throwable> thrown = new ArrayList<>();
        final List<Level> levels = new ArrayList<>();

        @Override
        public String getName() {
            return "test";
        }

        @Override
        public boolean isLoggable(Level level) {
            return true;
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String msg, Throwable t) {
            levels.add(level);
            messages.add(msg);
            thrown.add(t);
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String format, Object... params) {
            log(level, bundle, format, (Throwable) null);
        }

        @Override
        public void log(Level level, Supplier<String> msgSupplier) {
            log(level, null, msgSupplier.get(), (Throwable) null);
        }
    }

    @Test
    void shouldEscapeEveryCharacterThatCouldStartOrHideALine() {
        assertEquals("nqn.x\\nSEVERE: control request POST / failed", LogText.escape("nqn.x\nSEVERE: control request POST / failed"));
        assertEquals("a\\rb\\tc\\\\n", LogText.escape("a\rb\tc\\n"), "a client's backslash is doubled: \\n always means a line feed was sent");
        assertEquals("\\x00\\x1b[2J\\x7f\\x85\\x9f", LogText.escape("\0\u001b[2J\u007f\u0085\u009f"), "other C0, DEL and C1 (NEL) as \\xHH");
        assertEquals("a\\u2028b\\u2029c", LogText.escape("a\u2028b\u2029c"), "line and paragraph separators");
        assertEquals("\\u202eevil\\u200b\\ufeff", LogText.escape("\u202eevil\u200b\ufeff"), "bidi override, zero-width space, BOM");
        assertEquals("\\ud800x\\udc00", LogText.escape("\ud800x\udc00"), "lone surrogates");
        String plain = "nqn.2014-08.org.nvmexpress:uuid:aaaa h\u00e9t\u00e9 \u4e2d\ud83d\ude00";
        assertSame(plain, LogText.escape(plain), "printable text, a surrogate pair among it, passes as it is");
        assertEquals("null", LogText.escape((String) null));
    }

    @Test
    void shouldClipLongClientTextSayingHowLongItWas() {
        String nqn = "n".repeat(300);
        assertEquals("n".repeat(LogText.CLIENT_CHARS) + "...(300 chars)", LogText.clip(nqn));
        assertEquals(nqn.substring(0, 256), LogText.clip(nqn.substring(0, 256)), "256 characters stay whole");
        String pairAtTheCut = "x".repeat(3) + "\ud83d\ude00" + "y";
        assertEquals("xxx...(6 chars)", LogText.clip(pairAtTheCut, 4), "never half a surrogate pair");
        assertNull(LogText.clip(null));
    }

    @Test
    void shouldEscapeAThrownItsCausesAndSuppressedKeepingTheirTraces() {
        var cause = new IllegalArgumentException("bad name 'a\nSEVERE: forged'");
        var thrown = new IllegalStateException("request /x\r\nfailed", cause);
        thrown.addSuppressed(new RuntimeException("also\u2028this"));
        Throwable escaped = LogText.escape(thrown);
        assertEquals("java.lang.IllegalStateException: request /x\\r\\nfailed", escaped.toString());
        assertEquals("java.lang.IllegalArgumentException: bad name 'a\\nSEVERE: forged'", escaped.getCause().toString());
        assertEquals("java.lang.RuntimeException: also\\u2028this", escaped.getSuppressed()[0].toString());
        assertEquals(List.of(thrown.getStackTrace()), List.of(escaped.getStackTrace()));
        StringWriter printed = new StringWriter();
        escaped.printStackTrace(new PrintWriter(printed));
        for (String line : printed.toString().split("\\R")) {
            assertFalse(line.startsWith("SEVERE") || line.startsWith("failed") || line.startsWith("this"), "a line of the client's: " + line);
        }
        assertNull(LogText.escape((Throwable) null));
    }

    @Test
    void aThrownWhoseCauseChainLoopsIsCopiedOnce() {
        var a = new RuntimeException("a");
        var b = new RuntimeException("b", a);
        a.initCause(b);
        Throwable escaped = LogText.escape(a);
        assertEquals("java.lang.RuntimeException: b", escaped.getCause().toString());
        assertNull(escaped.getCause().getCause(), "the loop is cut where it comes back");
    }

    @Test
    void aRateLimitedLogEscapesWhatItLogsAndKeepsItsLevel() {
        Lines lines = new Lines();
        var log = new RateLimitedLog(lines, System.Logger.Level.ERROR, new ManualClock(0), 5, "events");
        log.log("host nqn.x\nSEVERE: forged", new IllegalStateException("x\ny"));
        assertEquals(List.of("host nqn.x\\nSEVERE: forged"), lines.messages);
        assertEquals("java.lang.IllegalStateException: x\\ny", lines.thrown.getFirst().toString());
        assertEquals(List.of(System.Logger.Level.ERROR), lines.levels);
    }

    @Test
    void aRateLimitedLogKeepsToItsLinesPerSecondAndCountsTheRest() {
        Lines lines = new Lines();
        ManualClock clock = new ManualClock(0);
        var log = new RateLimitedLog(lines, clock, 5, "hosts refused");
        for (int i = 0; i < 2000; i++) log.log("host " + i, null);
        assertEquals(5, lines.messages.size());
        clock.advance(1_000_000_000L);
        log.log("host next", null);
        assertEquals(List.of("1995 more hosts refused not logged", "host next"), lines.messages.subList(5, 7));
        assertEquals(List.of(System.Logger.Level.WARNING), lines.levels.stream().distinct().toList(), "WARNING unless told");
    }
}
