package io.iotarget.control.config;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * A file replaced atomically, so that a crash at any moment leaves either the old contents
 * or the new, never a part:
 *
 * <ol>
 *   <li>the text goes to a new temporary file in the same directory ({@code .NAME.*.tmp}),
 *       created 0600 — a saved configuration holds DH-HMAC-CHAP keys;</li>
 *   <li>that file is fsynced, so its data is on disk before any name points at it;</li>
 *   <li>it is renamed over {@code NAME} (rename(2) replaces atomically within a file system);</li>
 *   <li>the directory is fsynced, so the rename itself survives a power loss.</li>
 * </ol>
 *
 * A crash before step 3 leaves a stray temporary file, which the next {@link #removeStrays}
 * deletes. Not thread-safe: callers serialize writes of one file.
 */
public final class StateFile {
    private final Path file;

    public StateFile(Path file) {
        this.file = file.toAbsolutePath();
    }

    public Path path() {
        return file;
    }

    /** Replaces the file's contents with {@code text} (UTF-8), atomically and durably. */
    public void write(String text) throws IOException {
        write(text.getBytes(StandardCharsets.UTF_8));
    }

    /** Replaces the file's contents with {@code bytes}, atomically and durably. */
    public void write(byte[] bytes) throws IOException {
        Path dir = file.getParent();
        Path tmp = Files.createTempFile(dir, "." + file.getFileName() + ".", ".tmp",
                                        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
                ByteBuffer b = ByteBuffer.wrap(bytes);
                while (b.hasRemaining()) ch.write(b);
                ch.force(true);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        syncDirectory(dir);
    }

    /** fsyncs a directory, so that the names made, renamed or removed in it survive a power loss. */
    static void syncDirectory(Path dir) throws IOException {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        }
    }

    /** Deletes temporary files a crash left behind in the file's directory. */
    public void removeStrays() throws IOException {
        try (DirectoryStream<Path> strays = Files.newDirectoryStream(file.getParent(), "." + file.getFileName() + ".*.tmp")) {
            for (Path stray : strays) Files.deleteIfExists(stray);
        }
    }
}
