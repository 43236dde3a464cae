package io.iotarget.buffer;

import io.iotarget.model.IoGroup;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/** Groups, a trim scheduler the test drives, a waiter that records, and the process's RSS. */
final class TestSupport {
    static final int KiB = 1 << 10;
    static final int MiB = 1 << 20;

    private TestSupport() {
    }

    record Group(long id, String path) implements IoGroup {
    }

    static IoGroup group(long id) {
        return new Group(id, "/tenant-" + id);
    }

    /** Trim passes run only when the test says so. */
    static final class ManualTrim implements BufferPool.TrimScheduler {
        private final ArrayDeque<Runnable> scheduled = new ArrayDeque<>();

        @Override
        public synchronized void schedule(Runnable pass, long delayMs) {
            scheduled.add(pass);
        }

        /** Runs the passes scheduled so far (not those they schedule); returns how many ran. */
        int runScheduled() {
            List<Runnable> due;
            synchronized (this) {
                due = new ArrayList<>(scheduled);
                scheduled.clear();
            }
            due.forEach(Runnable::run);
            return due.size();
        }

        synchronized boolean armed() {
            return !scheduled.isEmpty();
        }
    }

    /** Records what it is given, in order. */
    static final class RecordingWaiter implements BufferWaiter {
        final String name;
        final List<PooledBuffer> received = new ArrayList<>();
        final List<String> log;

        RecordingWaiter(String name, List<String> log) {
            this.name = name;
            this.log = log;
        }

        @Override
        public synchronized void available(PooledBuffer buffer) {
            received.add(buffer);
            synchronized (log) {
                log.add(name);
            }
        }

        synchronized PooledBuffer only() {
            if (received.size() != 1) throw new AssertionError(name + " received " + received.size() + " buffers");
            return received.getFirst();
        }
    }

    /** VmRSS of this process, in bytes. */
    static long rssBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        throw new AssertionError("no VmRSS in /proc/self/status");
    }

    /** Writes one byte in every page, making the whole buffer resident. */
    static void touch(PooledBuffer buffer) {
        for (int i = 0; i < buffer.buffer().capacity(); i += 4096) buffer.buffer().put(i, (byte) 1);
    }
}
