package io.iotarget.model;

import org.junit.jupiter.api.Test;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CountedErrorHandlerTest {
    /**
     * A ScheduledExecutorService cancels a repeating task for good the first time it throws, in
     * silence: a keep-alive timer that met one OutOfMemoryError would never fire again. Guarded,
     * the task runs on, and the failure is counted.
     */
    @Test
    void shouldKeepARepeatingTimerAliveThroughAnError() throws Exception {
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        try {
            CountedErrorHandler errors = new CountedErrorHandler("test timer");
            AtomicInteger runs = new AtomicInteger();
            CountDownLatch ranAgain = new CountDownLatch(3);
            Runnable tick = () -> {
                if (runs.incrementAndGet() == 1) throw new OutOfMemoryError("simulated");
                ranAgain.countDown();
            };
            var unguarded = timer.scheduleWithFixedDelay(tick, 0, 5, TimeUnit.MILLISECONDS);
            Thread.sleep(200);                  // forty periods in which the cancelled timer must not run again
            assertEquals(1, runs.get(), "the executor cancelled the unguarded timer after its Error");
            assertTrue(unguarded.isDone());

            runs.set(0);
            var guarded = timer.scheduleWithFixedDelay(errors.guard(tick), 0, 5, TimeUnit.MILLISECONDS);
            assertTrue(ranAgain.await(5, TimeUnit.SECONDS), "the guarded timer goes on after its Error");
            assertFalse(guarded.isDone());
            assertEquals(1, errors.count());
        } finally {
            timer.shutdownNow();
        }
    }

    @Test
    void shouldLogAStormOfFailuresOnceAndCountEveryOne() {
        CountedErrorHandler errors = new CountedErrorHandler("test storm");
        for (int i = 0; i < 10_000; i++) errors.onError(new IllegalStateException("failure " + i));
        assertEquals(10_000, errors.count());
    }
}
