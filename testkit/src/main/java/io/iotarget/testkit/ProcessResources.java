package io.iotarget.testkit;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * What this JVM holds of the machine, for tests that run a server in-process and must show
 * that misbehaving clients leave nothing behind: live threads, open descriptors
 * (/proc/self/fd), direct-buffer memory, heap in use (after a full collection: live objects)
 * and resident memory. The JVM keeps heap it once grew into, and glibc keeps freed direct memory
 * in its arenas, so resident memory is only meaningful against a baseline taken after the same
 * kind of load has run for a while.
 *
 * @param threads        live Java threads
 * @param descriptors    entries of /proc/self/fd
 * @param directBytes    memory of live direct buffers (the front ends' data buffers come from there)
 * @param heapUsedBytes  heap in use (after {@link #awaitNear}'s collection: live objects)
 * @param rssBytes       VmRSS
 */
public record ProcessResources(int threads, int descriptors, long directBytes, long heapUsedBytes, long rssBytes) {
    /** How far above a baseline is still "back": each bound names why it is not zero. */
    public record Tolerance(int threads, int descriptors, long directBytes, long heapUsedBytes, long rssBytes) {
    }

    /**
     * setrlimit(RLIMIT_NOFILE) on this process, soft limit only ({@code soft} -1 leaves it), for
     * tests that run a listener out of descriptors; the limits as they were: {soft, hard}.
     */
    @SuppressWarnings("restricted")
    public static long[] fileLimit(long soft) throws Throwable {
        final int rlimitNofile = 7;
        Linker linker = Linker.nativeLinker();
        FunctionDescriptor signature = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS);
        MethodHandle get = linker.downcallHandle(linker.defaultLookup().find("getrlimit").orElseThrow(), signature);
        MethodHandle set = linker.downcallHandle(linker.defaultLookup().find("setrlimit").orElseThrow(), signature);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment limit = arena.allocate(16);
            if ((int) get.invokeExact(rlimitNofile, limit) != 0) throw new IllegalStateException("getrlimit(RLIMIT_NOFILE) failed");
            long[] was = {limit.get(ValueLayout.JAVA_LONG, 0), limit.get(ValueLayout.JAVA_LONG, 8)};
            if (soft >= 0) {
                limit.set(ValueLayout.JAVA_LONG, 0, soft);
                if ((int) set.invokeExact(rlimitNofile, limit) != 0) throw new IllegalStateException("setrlimit(RLIMIT_NOFILE, " + soft + ") failed");
            }
            return was;
        }
    }

    public static ProcessResources now() {
        var heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
        return new ProcessResources(ManagementFactory.getThreadMXBean().getThreadCount(), openDescriptors(), liveDirectBytes(),
                heap.getUsed(), residentBytes());
    }

    /**
     * Collects garbage (so that direct buffers of closed connections are freed) and waits up to
     * {@code timeoutMs} for every count to be within {@code tolerance} of {@code baseline}.
     *
     * @return null when they are, else a description of what stayed high
     */
    public static String awaitNear(ProcessResources baseline, Tolerance tolerance, long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        while (true) {
            System.gc();
            Thread.sleep(100);
            ProcessResources now = now();
            String excess = now.excessOver(baseline, tolerance);
            if (excess == null || System.nanoTime() > deadline) return excess;
        }
    }

    private String excessOver(ProcessResources base, Tolerance t) {
        StringBuilder b = new StringBuilder();
        if (threads > base.threads + t.threads) b.append(" threads ").append(base.threads).append(" -> ").append(threads);
        if (descriptors > base.descriptors + t.descriptors) b.append(" descriptors ").append(base.descriptors).append(" -> ").append(descriptors);
        if (directBytes > base.directBytes + t.directBytes) b.append(" direct memory ").append(mib(base.directBytes)).append(" -> ").append(mib(directBytes));
        if (heapUsedBytes > base.heapUsedBytes + t.heapUsedBytes) b.append(" heap ").append(mib(base.heapUsedBytes)).append(" -> ").append(mib(heapUsedBytes));
        if (rssBytes > base.rssBytes + t.rssBytes) b.append(" RSS ").append(mib(base.rssBytes)).append(" -> ").append(mib(rssBytes));
        return b.isEmpty() ? null : b.toString().strip();
    }

    @Override
    public String toString() {
        return "threads=" + threads + " descriptors=" + descriptors + " direct=" + mib(directBytes) + " heap=" + mib(heapUsedBytes)
               + " rss=" + mib(rssBytes);
    }

    private static String mib(long bytes) {
        return (bytes >> 20) + " MiB";
    }

    private static int openDescriptors() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return (int) fds.count() - 1;                   // less the directory stream itself
        } catch (IOException e) {
            throw new IllegalStateException("cannot list /proc/self/fd", e);
        }
    }

    private static long liveDirectBytes() {
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (pool.getName().equals("direct")) return pool.getMemoryUsed();
        }
        return 0;
    }

    private static long residentBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot read /proc/self/status", e);
        }
        return 0;
    }
}
