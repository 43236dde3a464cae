package io.iotarget.bench;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/**
 * Why the front ends keep a command's data buffer instead of allocating one per command
 * (docs/decisions.md): the cost of getting and freeing a 1 MiB buffer with a deterministic free
 * (a shared {@link Arena}, as the buffers are handed between threads), against copying the
 * MiB itself, which every write pays anyway.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class DataBufferBenchmark {
    private static final int BYTES = 1 << 20;
    private static final int PAGE = 4096;

    private final ByteBuffer source = ByteBuffer.allocateDirect(BYTES);
    private final ByteBuffer target = ByteBuffer.allocateDirect(BYTES);

    @Benchmark
    public long allocateAndFreeShared() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buffer = arena.allocate(BYTES, PAGE);
            return buffer.address();
        }
    }

    @Benchmark
    public ByteBuffer copy() {
        return target.clear().put(source.clear());
    }
}
