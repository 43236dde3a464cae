package io.iotarget.control;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code iotarget batch [-e]} (also {@code iotarget -}): client commands read from standard
 * input, one a line, all over one proven connection, so a script that sets up a thousand
 * tenants starts one JVM and proves the server once instead of a thousand times.
 * <p>
 * A line is split into words as a shell splits a simple command, without expansion:
 * whitespace separates words; {@code '...'} is literal; in {@code "..."} a backslash escapes
 * {@code "} and {@code \}; outside quotes a backslash escapes the next character; a {@code #}
 * that starts a word starts a comment. Blank and comment lines are skipped but counted, so
 * line numbers in errors are the file's. Each failing line's error names its line
 * ({@code iotarget: line 3: write tenants/a/io.max: ERANGE ...}); the lines after it still run
 * (as a shell script without {@code set -e}), unless {@code -e} was given, or the server could
 * not be reached (status 3), after which none could succeed. The exit status is the first
 * failing line's (1 refused, 2 usage, 3 no server), or 0 when every line succeeded.
 * One thread: the caller's.
 */
final class Batch {
    /** Runs one line's command; returns its exit status. */
    @FunctionalInterface
    interface LineRunner {
        int run(int lineNumber, List<String> words);
    }

    /** Status of a line that cannot be split (an unclosed quote): a usage error, as the shell's syntax error. */
    private static final int UNSPLITTABLE = 2;
    private static final int NO_SERVER = 3;

    private Batch() {
    }

    /**
     * Runs each line of {@code in} (UTF-8) through {@code runner} in order; errors of its own
     * (a line that cannot be split, lines not run) go to {@code err}. Returns the first failing
     * line's status, or 0.
     */
    static int run(InputStream in, boolean stopAtFirstFailure, LineRunner runner, PrintStream err) {
        BufferedReader lines = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        int firstFailure = 0;
        int lineNumber = 0;
        try {
            for (String line; (line = lines.readLine()) != null; ) {
                lineNumber++;
                List<String> words;
                try {
                    words = split(line);
                } catch (IllegalArgumentException e) {
                    err.println("iotarget: line " + lineNumber + ": " + e.getMessage());
                    if (firstFailure == 0) firstFailure = UNSPLITTABLE;
                    if (stopAtFirstFailure) break;
                    continue;
                }
                if (words.isEmpty()) continue;
                int status = runner.run(lineNumber, words);
                if (status == 0) continue;
                if (firstFailure == 0) firstFailure = status;
                if (stopAtFirstFailure || status == NO_SERVER) {
                    err.println("iotarget: stopped at line " + lineNumber + (stopAtFirstFailure ? " (-e)" : " (no server)")
                                + "; the lines after it were not run");
                    break;
                }
            }
        } catch (IOException e) {
            err.println("iotarget: reading the batch after line " + lineNumber + ": " + e.getMessage());
            return firstFailure == 0 ? UNSPLITTABLE : firstFailure;
        }
        return firstFailure;
    }

    /** The words of one line (empty for a blank or comment line); throws IllegalArgumentException for an unclosed quote. */
    static List<String> split(String line) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        int i = 0;
        while (i < line.length()) {
            char c = line.charAt(i++);
            if (c == ' ' || c == '\t' || c == '\r') {
                if (inWord) words.add(word.toString());
                word.setLength(0);
                inWord = false;
            } else if (c == '#' && !inWord) {
                break;
            } else if (c == '\'') {
                int close = line.indexOf('\'', i);
                if (close < 0) throw new IllegalArgumentException("unclosed ' quote");
                word.append(line, i, close);
                i = close + 1;
                inWord = true;
            } else if (c == '"') {
                inWord = true;
                for (;;) {
                    if (i == line.length()) throw new IllegalArgumentException("unclosed \" quote");
                    char q = line.charAt(i++);
                    if (q == '"') break;
                    if (q == '\\' && i < line.length() && (line.charAt(i) == '"' || line.charAt(i) == '\\')) q = line.charAt(i++);
                    word.append(q);
                }
            } else if (c == '\\' && i < line.length()) {
                word.append(line.charAt(i++));
                inWord = true;
            } else {
                word.append(c);
                inWord = true;
            }
        }
        if (inWord) words.add(word.toString());
        return words;
    }
}
