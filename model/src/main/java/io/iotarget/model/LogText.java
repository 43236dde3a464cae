package io.iotarget.model;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * Text from outside the server made fit for a log line: the one way this server escapes what a
 * client sent (a host NQN, a certificate's subject, a request URI, an exception's message
 * quoting any of them) before it reaches the log. {@link RateLimitedLog} escapes every message
 * and thrown it logs; callers only {@link #clip} long client strings first. Stateless; any thread.
 *
 * <h2>1. Escaping</h2> A log reader must be able to tell the server's lines from a client's text,
 * so nothing a client sends may end a line, start one, or move what follows it on a terminal:
 * <pre>
 *   \n \r \t         as in C, Java and JSON: the forms a reader knows on sight
 *   \\               the backslash itself, so that every backslash in a line starts an escape
 *   \xHH             any other C0 control, DEL and the C1 controls (U+0080..U+009F, NEL among
 *                    them): they fit in one byte, as printf %q and Python's repr write them
 *   &#92;uHHHH           U+2028 and U+2029 (line and paragraph separators: a new line to many
 *                    viewers), other format characters (bidi overrides such as U+202E, which
 *                    reorder what a terminal shows; zero-width characters) and lone
 *                    surrogates: beyond one byte, so Java's and JSON's form
 * </pre>
 * A NQN of {@code nqn.x}, a line feed and {@code SEVERE: forged} is logged as
 * {@code nqn.x\nSEVERE: forged}, a backslash and an n in the middle: one line, which reads as
 * what the client sent.
 *
 * <h2>2. Clipping</h2> A client string longer than {@link #CLIENT_CHARS} is cut there and
 * followed by {@code ...(N chars)}: a NQN has at most 223 bytes, a host name 255, so anything
 * longer is a client being odd, and the first 256 characters say who it is.
 */
public final class LogText {
    /** A client string's characters kept in a log line: a NQN (223) or a DNS name (255) fits whole. */
    public static final int CLIENT_CHARS = 256;
    /** Causes and suppressed exceptions of one thrown followed before the rest is left out of the log. */
    private static final int MAX_THROWABLES = 32;

    private LogText() {
    }

    /** {@code text} with the characters of section 1 escaped; "null" for null. */
    public static String escape(String text) {
        if (text == null) return "null";
        int i = 0;
        while (i < text.length() && !needsEscape(text, i)) i++;
        if (i == text.length()) return text;           // the usual case: nothing to escape, nothing allocated
        StringBuilder out = new StringBuilder(text.length() + 16).append(text, 0, i);
        for (; i < text.length(); i++) {
            char c = text.charAt(i);
            if (!needsEscape(text, i)) {
                out.append(c);
                continue;
            }
            switch (c) {
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\\' -> out.append("\\\\");
                default -> {
                    if (c < 0x20 || c >= 0x7f && c <= 0x9f) out.append("\\x").append(hex(c >> 4)).append(hex(c));
                    else out.append("\\u").append(hex(c >> 12)).append(hex(c >> 8)).append(hex(c >> 4)).append(hex(c));
                }
            }
        }
        return out.toString();
    }

    /** {@code text} cut at {@link #CLIENT_CHARS}, for a string a client chose; not escaped (the log does that). */
    public static String clip(String text) {
        return clip(text, CLIENT_CHARS);
    }

    /** {@code text} cut at {@code maxChars} (never inside a surrogate pair) and followed by {@code ...(N chars)}; null stays null. */
    public static String clip(String text, int maxChars) {
        if (text == null || text.length() <= maxChars) return text;
        int end = Character.isHighSurrogate(text.charAt(maxChars - 1)) ? maxChars - 1 : maxChars;
        return text.substring(0, end) + "...(" + text.length() + " chars)";
    }

    /**
     * A stand-in for {@code thrown} whose text is escaped: a log formatter prints a thrown's
     * {@code toString()} and those of its causes and suppressed exceptions, any of which may quote
     * a client. Same stack traces; the stand-in's {@code toString()} names the original class.
     * Null for null.
     */
    public static Throwable escape(Throwable thrown) {
        if (thrown == null) return null;
        return new Escaped(thrown, Collections.newSetFromMap(new IdentityHashMap<>()));
    }

    private static boolean needsEscape(String text, int i) {
        char c = text.charAt(i);
        if (c >= 0x20 && c < 0x7f) return c == '\\';
        if (c <= 0x9f) return true;                     // C0, DEL, C1
        if (Character.isHighSurrogate(c)) return i + 1 == text.length() || !Character.isLowSurrogate(text.charAt(i + 1));
        if (Character.isLowSurrogate(c)) return i == 0 || !Character.isHighSurrogate(text.charAt(i - 1));
        int type = Character.getType(c);
        return type == Character.LINE_SEPARATOR || type == Character.PARAGRAPH_SEPARATOR || type == Character.FORMAT;
    }

    private static char hex(int nibble) {
        return Character.forDigit(nibble & 0xf, 16);
    }

    /** An escaped copy of a thrown, its causes and its suppressed exceptions (each once, as Throwable prints them). */
    private static final class Escaped extends Throwable {
        private static final long serialVersionUID = 1L;
        private final String text;

        Escaped(Throwable original, Set<Throwable> seen) {
            super(original.getMessage() == null ? null : escape(original.getMessage()));     // the cause stays unset until initCause
            seen.add(original);
            this.text = escape(original.toString());
            setStackTrace(original.getStackTrace());
            Throwable cause = original.getCause();
            if (cause != null && !seen.contains(cause) && seen.size() < MAX_THROWABLES) initCause(new Escaped(cause, seen));
            for (Throwable s : original.getSuppressed()) {
                if (!seen.contains(s) && seen.size() < MAX_THROWABLES) addSuppressed(new Escaped(s, seen));
            }
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this;                                // the original's trace is set instead
        }

        @Override
        public String toString() {
            return text;
        }
    }
}
