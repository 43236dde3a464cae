package io.iotarget.frontend.nvmetcp;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * What one NVMe/TCP response costs in its {@link SlotQueue}, as Connection pays it for a
 * completion on another thread: push the slot, arm the flush, then (the flush task) lower the
 * flag and poll (a queue that empties each time, so the poll pushes the stub back too).
 * Uncontended, on one thread: the cost of the fences themselves, which is what the choice of
 * how the wake-up is ordered changes (SlotQueue's notes, docs/decisions.md).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class SlotQueueBenchmark {
    private final SlotQueue queue = new SlotQueue();
    private final CommandSlot slot = new CommandSlot(1, null);

    @Benchmark
    public CommandSlot response() {
        queue.push(slot);
        if (queue.armFlush()) queue.flushStarting();
        return queue.poll();
    }
}
