package io.iotarget.testkit;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * CPU time of this JVM's threads since a snapshot, by thread name, for tests that must show that
 * one thread waits rather than spins (an accept loop out of descriptors). Judge the thread that
 * does the work: the process as a whole also spends CPU on the JIT, the collector and whatever
 * earlier test classes left running, which a loaded machine stretches into any one second.
 */
public final class ThreadCpu {
    private final Map<Long, Long> nsById;

    private ThreadCpu(Map<Long, Long> nsById) {
        this.nsById = nsById;
    }

    /** Every live thread's CPU time now. Takes no file descriptor, so it works at RLIMIT_NOFILE's floor. */
    public static ThreadCpu snapshot() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        Map<Long, Long> ns = new HashMap<>();
        for (long id : threads.getAllThreadIds()) {
            long t = threads.getThreadCpuTime(id);
            if (t >= 0) ns.put(id, t);
        }
        return new ThreadCpu(ns);
    }

    /**
     * Milliseconds of CPU each thread name used since this snapshot (threads of one name summed,
     * threads started since counted from zero), largest first, those of 1 ms or more.
     */
    public Map<String, Long> msSince() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        Map<String, Long> ns = new HashMap<>();
        for (ThreadInfo info : threads.getThreadInfo(threads.getAllThreadIds())) {
            if (info == null) continue;
            long t = threads.getThreadCpuTime(info.getThreadId());
            if (t >= 0) ns.merge(info.getThreadName(), t - nsById.getOrDefault(info.getThreadId(), 0L), Long::sum);
        }
        Map<String, Long> ms = new LinkedHashMap<>();
        ns.entrySet().stream()
                .filter(e -> e.getValue() >= 1_000_000L)
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .forEach(e -> ms.put(e.getKey(), e.getValue() / 1_000_000L));
        return ms;
    }

    /** Of {@code byName} ({@link #msSince}), the milliseconds of the threads whose name starts with {@code prefix}. */
    public static long ms(Map<String, Long> byName, String prefix) {
        return byName.entrySet().stream().filter(e -> e.getKey().startsWith(prefix)).mapToLong(Map.Entry::getValue).sum();
    }
}
