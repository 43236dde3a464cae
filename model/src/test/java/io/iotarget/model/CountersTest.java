package io.iotarget.model;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class CountersTest {
    private enum Sample implements CounterDescriptor {
        ERRORS(Kind.COUNTER), DEPTH(Kind.GAUGE), KEPT_ELSEWHERE(Kind.COUNTER);

        private final Description description;

        Sample(Kind kind) {
            this.description = new Description(name().toLowerCase(), kind, "a sample");
        }

        @Override
        public Description description() {
            return description;
        }
    }

    @Test
    void shouldReadCountedAndSourcedEntriesThroughOneApiInCatalogueOrder() throws Exception {
        AtomicLong depth = new AtomicLong(3);
        Counters<Sample> counters = new Counters<>(Sample.class).source(Sample.DEPTH, depth::get).source(Sample.KEPT_ELSEWHERE, () -> 7);
        Thread[] writers = new Thread[4];
        for (int t = 0; t < writers.length; t++) {
            writers[t] = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 10_000; i++) counters.increment(Sample.ERRORS);
            });
        }
        for (Thread w : writers) w.join();
        counters.add(Sample.ERRORS, 5);
        depth.set(1);

        assertEquals(40_005, counters.counter(Sample.ERRORS), "exact once the writers stopped");
        assertEquals(1, counters.counter(Sample.DEPTH), "a gauge reads its source at the moment");
        assertEquals(List.of(Sample.ERRORS, Sample.DEPTH, Sample.KEPT_ELSEWHERE), List.copyOf(counters.snapshot().keySet()));
        assertEquals(List.of(40_005L, 1L, 7L), List.copyOf(counters.snapshot().values()));
        Counters<?> untyped = counters;
        assertEquals(7, untyped.as(Sample.class).counter(Sample.KEPT_ELSEWHERE));
        assertThrows(IllegalArgumentException.class, () -> untyped.as(Other.class));
    }

    private enum Other implements CounterDescriptor {
        X;

        @Override
        public Description description() {
            return Description.counter("x", "x");
        }
    }
}
