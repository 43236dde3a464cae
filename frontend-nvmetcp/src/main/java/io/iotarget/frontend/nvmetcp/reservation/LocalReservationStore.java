package io.iotarget.frontend.nvmetcp.reservation;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reservations kept in this server, as nvmet keeps them: gone with the process, except those
 * whose PTPL is set when there is a {@code file} (the config's {@code server.state}, with the
 * suffix {@code .reservations}): every change of such a state rewrites the file (a temporary
 * file, fsync, rename), and a start reads it back. The file holds one line per namespace,
 * {@code KEY STATE} ({@link ReservationState#encode}). Any thread (synchronized).
 */
public final class LocalReservationStore implements ReservationStore {
    private final Map<String, ReservationState> states = new TreeMap<>();
    /** Null: nothing persists (RESCAP without PTPL). */
    private final Path file;

    /** A store without persistence. */
    public LocalReservationStore() {
        this.file = null;
    }

    /** A store that keeps PTPL states in {@code file}, restored from it if it exists. */
    public LocalReservationStore(Path file) throws IOException {
        this.file = file;
        if (!Files.exists(file)) return;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            if (line.isBlank()) continue;
            int space = line.indexOf(' ');
            try {
                states.put(line.substring(0, space), ReservationState.decode(line.substring(space + 1)));
            } catch (RuntimeException e) {
                throw new IOException(file + ": not a reservation line: " + line, e);
            }
        }
    }

    @Override
    public synchronized ReservationState read(String key) {
        return states.getOrDefault(key, ReservationState.EMPTY);
    }

    @Override
    public synchronized boolean replace(String key, ReservationState next, List<ReservationState.Notice> notices) throws StoreException {
        ReservationState before = read(key);
        if (before.version() != next.version() - 1) return false;
        states.put(key, next);
        if (file == null || (!before.ptpl() && !next.ptpl())) return true;
        try {
            save();
        } catch (StoreException e) {
            states.put(key, before);                    // not kept, so not made
            throw e;
        }
        return true;
    }

    /** Writes every PTPL state, replacing the file atomically. */
    private void save() throws StoreException {
        StringBuilder text = new StringBuilder();
        states.forEach((key, s) -> {
            if (s.ptpl()) text.append(key).append(' ').append(s.encode()).append('\n');
        });
        Path temporary = file.resolveSibling(file.getFileName() + ".tmp");
        try {
            Files.deleteIfExists(temporary);
            Files.createFile(temporary, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(temporary, text, StandardCharsets.UTF_8, StandardOpenOption.WRITE, StandardOpenOption.SYNC);
            Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | UncheckedIOException e) {
            throw new StoreException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }

    @Override
    public boolean shared() {
        return false;
    }

    @Override
    public boolean persistent() {
        return file != null;
    }

    @Override
    public void listen(Listener listener) {
        // No other node.
    }

    @Override
    public void close() {
    }
}
