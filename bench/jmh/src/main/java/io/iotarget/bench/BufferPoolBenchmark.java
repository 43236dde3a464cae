package io.iotarget.bench;

import io.iotarget.buffer.BufferAccount;
import io.iotarget.buffer.BufferPool;
import io.iotarget.buffer.PooledBuffer;
import io.iotarget.model.IoGroup;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A data buffer per command: getting one, writing a long into each of its pages (what makes
 * fresh memory resident) and giving it back, from the {@link BufferPool} and from the JDK's
 * alternatives. Run with {@code -t 1} and {@code -t 2}; {@code -prof gc} shows what each
 * allocates. The hit paths' threads share one pool.
 *
 * <ul>
 *   <li>{@code poolHit}: the class has a cached buffer (steady state); all threads take from
 *       one account. {@code poolHitOwnAccount}: the same with an account per thread.
 *   <li>{@code poolMiss}: every take finds its class empty and its (per-thread) pool full of
 *       the other class's cached buffer: it drops that buffer's pages (MADV_DONTNEED) and
 *       faults in a cleared slot; half the takes are {@code size}, half {@code 2 × size}.
 *   <li>{@code allocateDirect}: {@code ByteBuffer.allocateDirect}, page-aligned as the front ends
 *       do; freed later by a GC, whose cost is only partly in the number.
 *   <li>{@code sharedArena}: a page-aligned segment of its own {@code Arena.ofShared()}, closed.
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class BufferPoolBenchmark {
    private static final int PAGE = 4096;
    private static final IoGroup TENANT = new IoGroup() {
        @Override
        public long id() {
            return 2;
        }

        @Override
        public String path() {
            return "/bench";
        }
    };

    /** The size measured and a roomy pool that the benchmark's threads share. */
    @State(Scope.Benchmark)
    public static class Shared {
        @Param({"4096", "1048576"})
        int size;

        BufferAccount account;
        BufferPool pool;

        @Setup(Level.Trial)
        public void open() {
            pool = new BufferPool(1L << 30, 1L << 30);
            account = pool.account(TENANT);
        }

        @TearDown(Level.Trial)
        public void close() {
            pool.close();
        }
    }

    /** An account of the shared pool for this thread alone: another tenant per thread. */
    @State(Scope.Thread)
    public static class Own {
        private static final AtomicLong NEXT_GROUP = new AtomicLong(100);
        BufferAccount account;

        @Setup(Level.Trial)
        public void open(Shared shared) {
            long id = NEXT_GROUP.getAndIncrement();
            account = shared.pool.account(new IoGroup() {
                @Override
                public long id() {
                    return id;
                }

                @Override
                public String path() {
                    return "/bench-" + id;
                }
            });
        }
    }

    /**
     * A pool per thread with room for a buffer of {@code size} or one of {@code 2 × size},
     * not both: each take must clear the other class's cached buffer.
     */
    @State(Scope.Thread)
    public static class Tight {
        BufferAccount account;
        boolean doubled;
        private BufferPool pool;

        @Setup(Level.Trial)
        public void open(Shared shared) {
            pool = new BufferPool(2L * shared.size, 2L * shared.size);
            account = pool.account(TENANT);
        }

        @TearDown(Level.Trial)
        public void close() {
            pool.close();
        }
    }

    private static long touchPages(ByteBuffer buffer, int bytes) {
        long sum = 0;
        for (int i = 0; i < bytes; i += PAGE) {
            buffer.putLong(i, i);
            sum += i;
        }
        return sum;
    }

    @Benchmark
    public long poolHit(Shared shared) {
        PooledBuffer buffer = shared.account.tryTake(shared.size);
        long sum = touchPages(buffer.buffer(), shared.size);
        buffer.release();
        return sum;
    }

    @Benchmark
    public long poolHitOwnAccount(Shared shared, Own own) {
        PooledBuffer buffer = own.account.tryTake(shared.size);
        long sum = touchPages(buffer.buffer(), shared.size);
        buffer.release();
        return sum;
    }

    @Benchmark
    public long poolMiss(Shared shared, Tight tight) {
        tight.doubled = !tight.doubled;
        int bytes = tight.doubled ? 2 * shared.size : shared.size;
        PooledBuffer buffer = tight.account.tryTake(bytes);
        long sum = touchPages(buffer.buffer(), bytes);
        buffer.release();
        return sum;
    }

    @Benchmark
    public ByteBuffer allocateDirect(Shared shared) {
        ByteBuffer buffer = ByteBuffer.allocateDirect(shared.size + PAGE).alignedSlice(PAGE);
        touchPages(buffer, shared.size);
        return buffer;
    }

    @Benchmark
    public long sharedArena(Shared shared) {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment segment = arena.allocate(shared.size, PAGE);
            long sum = 0;
            for (long i = 0; i < shared.size; i += PAGE) {
                segment.set(ValueLayout.JAVA_LONG, i, i);
                sum += i;
            }
            return sum;
        }
    }
}
