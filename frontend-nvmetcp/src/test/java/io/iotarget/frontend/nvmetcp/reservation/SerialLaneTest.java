package io.iotarget.frontend.nvmetcp.reservation;

import io.iotarget.model.CountedErrorHandler;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** A lane runs its tasks in order, a held one holds back only its own lane, and a failing one does not stop it. */
class SerialLaneTest {
    @Test
    void shouldRunInOrderAndHoldBackOnlyItsOwnLaneWhileATaskIsPending() throws Exception {
        CountedErrorHandler errors = new CountedErrorHandler("test");
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            SerialLane held = new SerialLane(threads, errors), other = new SerialLane(threads, errors);
            List<Integer> ran = new CopyOnWriteArrayList<>();
            CompletableFuture<Void> release = new CompletableFuture<>();
            held.submit(() -> {
                ran.add(0);
                return release;                                  // holds the lane, no thread
            });
            CompletableFuture<Integer> behind = held.call(() -> {
                ran.add(1);
                return 1;
            });
            for (int i = 0; i < 100; i++) {
                int n = i;
                other.execute(() -> ran.add(100 + n));
            }
            assertEquals(100 + 99, other.call(() -> ran.getLast()).get(10, TimeUnit.SECONDS), "the other lane ran all, in order");
            assertFalse(behind.isDone(), "the held lane's next task waits for the stage");
            release.complete(null);
            assertEquals(1, behind.get(10, TimeUnit.SECONDS));
            List<Integer> others = ran.stream().filter(n -> n >= 100).toList();
            for (int i = 0; i < 100; i++) assertEquals(100 + i, others.get(i), "order within the other lane");
            assertEquals(List.of(0, 1), ran.stream().filter(n -> n < 100).toList(), "order within the held lane");
            held.execute(() -> {
                throw new IllegalStateException("a failing task");
            });
            assertEquals(2, held.call(() -> 2).get(10, TimeUnit.SECONDS), "the lane goes on after a failure");
            assertEquals(1, errors.count());
        }
    }
}
