package io.iotarget.control.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

/**
 * The changes made since a snapshot of {@code server.state}, one JSON line each, appended and
 * fsynced before the client hears of them: {@code ["mkdir","tenants/a"]},
 * {@code ["write","tenants/a/io.max","259:0 riops=100"]}, {@code ["link",TARGET,LINK]}, as the
 * control endpoint passed them to the mounted trees. Its first line names the snapshot it
 * follows by the SHA-256 of the snapshot's bytes: {@code {"snapshot":"9f86d0..."}}, so that
 * a restart replays it only onto that snapshot (see {@link PersistedTree} for the files and
 * their order). Created 0600: writes hold DH-HMAC-CHAP keys. Not thread-safe: the caller
 * serializes appends.
 */
final class Journal implements Closeable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SNAPSHOT = "snapshot";

    private final Path file;
    private final FileChannel channel;
    private long bytes;

    private Journal(Path file, FileChannel channel, long bytes) {
        this.file = file;
        this.channel = channel;
        this.bytes = bytes;
    }

    /** Starts {@code file} afresh (emptied if it exists) as the journal after the snapshot {@code snapshot}; durable on return. */
    static Journal create(Path file, byte[] snapshot) throws IOException {
        FileChannel channel = FileChannel.open(file, Set.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING),
                                             PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            Journal journal = new Journal(file, channel, 0);
            journal.appendLine(JSON.createObjectNode().put(SNAPSHOT, hash(snapshot)).toString());
            return journal;
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    Path file() {
        return file;
    }

    /** Bytes written so far, the snapshot line included. */
    long bytes() {
        return bytes;
    }

    /** Appends one change ({@code op} and its arguments) and fsyncs it. */
    void append(String op, String... args) throws IOException {
        ArrayNode record = JsonNodeFactory.instance.arrayNode().add(op);
        for (String a : args) record.add(a);
        appendLine(record.toString());
    }

    private void appendLine(String line) throws IOException {
        ByteBuffer b = ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.UTF_8));
        int n = b.remaining();
        while (b.hasRemaining()) channel.write(b);
        channel.force(false);
        bytes += n;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    /** The SHA-256 of a snapshot's bytes, in hex, as a journal's first line names it. */
    static String hash(byte[] snapshot) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(snapshot));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    /** Whether {@code file}'s first line names {@code snapshot} (false for a first line a crash cut short). */
    static boolean follows(Path file, byte[] snapshot) throws IOException {
        List<String> lines = lines(file);
        if (lines.isEmpty()) return false;
        try {
            return JSON.readTree(lines.getFirst()).path(SNAPSHOT).asText().equals(hash(snapshot));
        } catch (JsonProcessingException e) {
            return false;
        }
    }

    /**
     * Replays {@code file}'s changes onto {@code tree}. A last line without its newline is the
     * append a crash cut short — never acknowledged — and is left out.
     *
     * @param advice what to do when a change cannot be replayed, ending the message
     */
    static int replay(Path file, ConfigTree tree, String advice) throws IOException, ConfigException {
        List<String> lines = lines(file);
        for (int i = 1; i < lines.size(); i++) {
            String where = file + " line " + (i + 1);
            String[] r;
            try {
                JsonNode record = JSON.readTree(lines.get(i));
                r = new String[record.size()];
                for (int k = 0; k < r.length; k++) {
                    if (!record.get(k).isTextual()) throw new IllegalArgumentException("not a string: " + record.get(k));
                    r[k] = record.get(k).textValue();
                }
            } catch (JsonProcessingException | IllegalArgumentException e) {
                throw new ConfigException(where + ": not a change this server wrote (" + e.getMessage() + "); " + advice);
            }
            try {
                apply(tree, r);
            } catch (ControlException e) {
                throw new ConfigException(where + ": " + String.join(" ", List.of(r).subList(0, Math.min(2, r.length))) + ": "
                                          + e.getMessage() + "; " + advice, e);
            } catch (IllegalArgumentException e) {
                throw new ConfigException(where + ": " + e.getMessage() + "; " + advice);
            }
        }
        return Math.max(0, lines.size() - 1);
    }

    private static void apply(ConfigTree tree, String[] r) throws ControlException {
        String op = r.length == 0 ? "" : r[0];
        switch (op) {
            case "write" -> tree.write(arg(r, 1, 3), r[2]);
            case "mkdir" -> tree.mkdir(arg(r, 1, 2));
            case "rmdir" -> tree.rmdir(arg(r, 1, 2));
            case "link" -> tree.link(arg(r, 1, 3), r[2]);
            case "unlink" -> tree.unlink(arg(r, 1, 2));
            default -> throw new IllegalArgumentException("unknown change " + (r.length == 0 ? "[]" : "\"" + op + "\""));
        }
    }

    private static String arg(String[] r, int index, int length) {
        if (r.length != length) throw new IllegalArgumentException(r[0] + " takes " + (length - 1) + " argument(s), got " + (r.length - 1));
        return r[index];
    }

    /** The complete lines of {@code file}: a last line without its newline is dropped. */
    private static List<String> lines(Path file) throws IOException {
        String text = Files.readString(file);
        int end = text.lastIndexOf('\n');
        return end < 0 ? List.of() : List.of(text.substring(0, end).split("\n", -1));
    }
}
