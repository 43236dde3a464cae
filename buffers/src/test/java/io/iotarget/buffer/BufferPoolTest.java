package io.iotarget.buffer;

import io.iotarget.buffer.TestSupport.ManualTrim;
import io.iotarget.buffer.TestSupport.RecordingWaiter;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static io.iotarget.buffer.TestSupport.KiB;
import static io.iotarget.buffer.TestSupport.MiB;
import static io.iotarget.buffer.TestSupport.group;
import static io.iotarget.buffer.TestSupport.touch;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BufferPoolTest {
    private final ManualTrim trim = new ManualTrim();
    private final List<BufferPool> pools = new ArrayList<>();

    private BufferPool pool(long capacity, long share) {
        BufferPool pool = new BufferPool(capacity, share, trim);
        pools.add(pool);
        return pool;
    }

    @AfterEach
    void closePools() {
        pools.forEach(BufferPool::close);
    }

    @Test
    void shouldServeEverySizeDirectAlignedWithTheSizeAskedAsLimit() {
        BufferAccount account = pool(256 * MiB, 64 * MiB).account(group(2));
        for (int bytes : new int[] {1, 511, 4095, 4096, 4097, 65536, MiB + 1, 32 * MiB}) {
            PooledBuffer taken = account.tryTake(bytes);
            ByteBuffer buffer = taken.buffer();
            assertTrue(buffer.isDirect());
            assertEquals(0, buffer.position());
            assertEquals(bytes, buffer.limit());
            assertEquals(bytes, taken.size());
            assertEquals(Math.max(4096, Integer.highestOneBit(bytes - 1) << 1), buffer.capacity(), "class of " + bytes);
            assertEquals(0, MemorySegment.ofBuffer(buffer).address() % 4096, "alignment of " + bytes);
            buffer.put(buffer.limit() - 1, (byte) 7);          // writable to the end
            taken.release();
        }
    }

    @Test
    void shouldChargeTheClassSizeNotTheSizeAsked() {
        BufferPool pool = pool(MiB, MiB);
        BufferAccount account = pool.account(group(2));
        PooledBuffer buffer = account.tryTake(5000);
        assertEquals(8192, account.inUseBytes());
        assertEquals(8192, pool.inUseBytes());
        assertEquals(8192, pool.residentBytes());
        buffer.release();
        assertEquals(0, account.inUseBytes());
        assertEquals(8192, pool.residentBytes(), "cached, still resident");
    }

    @Test
    void shouldRefuseTakesBeyondTheShareUntilARelease() {
        BufferPool pool = pool(MiB, 64 * KiB);
        BufferAccount account = pool.account(group(2));
        List<PooledBuffer> held = new ArrayList<>();
        for (int i = 0; i < 16; i++) held.add(account.tryTake(4096));
        assertNull(account.tryTake(1), "share of 64 KiB used up");
        assertNotNull(pool.account(group(3)).tryTake(4096), "another account is not affected");
        held.removeFirst().release();
        assertNotNull(account.tryTake(4096));
        assertEquals(64 * KiB, account.inUseBytes());
    }

    @Test
    void shouldRefuseASizeNoShareCanHoldNamingTheSizes() {
        BufferAccount account = pool(MiB, 256 * KiB).account(group(2));
        IllegalArgumentException tooLarge = assertThrows(IllegalArgumentException.class, () -> account.tryTake(300 * KiB));
        assertEquals("buffer of 307200 bytes takes a 524288-byte class, more than the share of 262144 bytes per account"
                + " (pool capacity 1048576 bytes)", tooLarge.getMessage());
        assertThrows(IllegalArgumentException.class, () -> account.take(300 * KiB, buffer -> { }));
        assertEquals("buffer of 0 bytes (expected: 1 to 1073741824)",
                assertThrows(IllegalArgumentException.class, () -> account.tryTake(0)).getMessage());
        assertEquals("buffer share 2097152 bytes, capacity 1048576 bytes (expected: 4096 <= share <= capacity)",
                assertThrows(IllegalArgumentException.class, () -> new BufferPool(MiB, 2 * MiB)).getMessage());
    }

    @Test
    void shouldClearCachedBuffersToMakeRoomBeforeRefusing() {
        BufferPool pool = pool(MiB, MiB);
        BufferAccount account = pool.account(group(2));
        PooledBuffer large = account.tryTake(MiB);
        touch(large);
        large.release();
        assertEquals(MiB, pool.residentBytes());

        PooledBuffer small = account.tryTake(4096);          // the cached MiB is in the way
        assertNotNull(small);
        assertEquals(4096, pool.residentBytes());
        assertEquals(1, pool.counter(BufferCounter.CLEARS));

        PooledBuffer again = account.tryTake(MiB - 4096 + 1);   // a MiB class: 4 KiB + 1 MiB > cap
        assertNull(again, "in use 4 KiB + 1 MiB would exceed the cap");
    }

    @Test
    void shouldNeverHoldMoreThanTheCapacityInUseAndCached() {
        long capacity = 2 * MiB;
        BufferPool pool = pool(capacity, capacity);
        BufferAccount account = pool.account(group(2));
        Random random = new Random(42);
        List<PooledBuffer> held = new ArrayList<>();
        for (int step = 0; step < 20_000; step++) {
            if (!held.isEmpty() && random.nextInt(3) == 0) {
                held.remove(random.nextInt(held.size())).release();
            } else {
                PooledBuffer buffer = account.tryTake(1 + random.nextInt(512 * KiB));
                if (buffer != null) {
                    buffer.buffer().put(0, (byte) 1);
                    held.add(buffer);
                }
            }
            long inUse = held.stream().mapToLong(b -> b.buffer().capacity()).sum();
            assertEquals(inUse, account.inUseBytes());
            assertTrue(pool.residentBytes() <= capacity, "resident " + pool.residentBytes());
            assertTrue(pool.residentBytes() >= inUse);
            if (step % 1000 == 0) trim.runScheduled();
        }
        held.forEach(PooledBuffer::release);
        assertEquals(0, pool.inUseBytes());
    }

    @Test
    void shouldReuseOneMappingForASteadyTakeAndReleaseLoop() {
        BufferPool pool = pool(64 * MiB, 64 * MiB);
        BufferAccount account = pool.account(group(2));
        for (int i = 0; i < 10_000; i++) {
            PooledBuffer buffer = account.tryTake(MiB);
            buffer.buffer().putLong(0, i);
            buffer.release();
            if (i % 1000 == 0) trim.runScheduled();         // a pass now and then sees it in use
        }
        assertEquals(1, pool.counter(BufferCounter.MAPS));
        assertEquals(0, pool.counter(BufferCounter.CLEARS));
    }

    @Test
    void shouldCutSmallClassesOutOfOneMapping() {
        BufferPool pool = pool(64 * MiB, 64 * MiB);
        BufferAccount account = pool.account(group(2));
        List<PooledBuffer> held = new ArrayList<>();
        for (int i = 0; i < BufferPool.CHUNK_BYTES / 4096; i++) held.add(account.tryTake(4096));
        assertEquals(1, pool.counter(BufferCounter.MAPS));
        assertEquals(held.size(), held.stream().map(b -> MemorySegment.ofBuffer(b.buffer()).address()).distinct().count());
        held.add(account.tryTake(4096));
        assertEquals(2, pool.counter(BufferCounter.MAPS));
        held.forEach(PooledBuffer::release);
    }

    @Test
    void shouldHandOutAFreshlyPositionedBigEndianBuffer() {
        BufferAccount account = pool(MiB, MiB).account(group(2));
        PooledBuffer first = account.tryTake(4096);
        first.buffer().order(ByteOrder.LITTLE_ENDIAN).position(100).limit(200);
        first.release();
        PooledBuffer second = account.tryTake(1000);
        assertSame(first, second, "the slot is reused");
        assertEquals(0, second.buffer().position());
        assertEquals(1000, second.buffer().limit());
        assertEquals(ByteOrder.BIG_ENDIAN, second.buffer().order());
    }

    @Test
    void shouldFailLoudlyOnDoubleReleaseAndKeepTheFreeListsIntact() {
        BufferPool pool = pool(MiB, MiB);
        BufferAccount account = pool.account(group(2));
        PooledBuffer buffer = account.tryTake(4096);
        buffer.release();
        IllegalStateException twice = assertThrows(IllegalStateException.class, buffer::release);
        assertEquals("buffer of 4096 bytes released twice (or never taken)", twice.getMessage());
        assertEquals(0, account.inUseBytes());
        assertEquals(4096, pool.residentBytes());

        PooledBuffer a = account.tryTake(4096);
        PooledBuffer b = account.tryTake(4096);
        assertSame(buffer, a, "the cached buffer, once");
        assertFalse(a == b, "the free list did not hand it out twice");
        assertEquals(8192, account.inUseBytes());
    }

    @Test
    void shouldServeTheWaitersOfAnAccountInOrder() {
        BufferPool pool = pool(MiB, 8 * KiB);
        BufferAccount account = pool.account(group(2));
        PooledBuffer first = account.tryTake(4096);
        PooledBuffer second = account.tryTake(4096);
        List<String> log = new ArrayList<>();
        RecordingWaiter w1 = new RecordingWaiter("w1", log);
        RecordingWaiter w2 = new RecordingWaiter("w2", log);
        RecordingWaiter w3 = new RecordingWaiter("w3", log);
        assertNull(account.take(8192, w1));
        assertNull(account.take(4096, w2));
        assertNull(account.take(4096, w3));
        assertEquals(3, account.waiting());
        assertNull(account.tryTake(4096), "tryTake does not pass queued takes");

        first.release();
        assertEquals(List.of(), log, "w1 needs all 8 KiB; w2 and w3 wait behind it");
        second.release();
        assertEquals(List.of("w1"), log);
        assertEquals(8192, w1.only().size());
        w1.only().release();
        assertEquals(List.of("w1", "w2", "w3"), log);
        assertEquals(0, account.waiting());
        assertEquals(8192, account.inUseBytes());
        assertEquals(3, pool.counter(BufferCounter.WAITS));
    }

    @Test
    void shouldServeAccountsRoundRobinWhenThePoolIsFull() {
        BufferPool pool = pool(64 * KiB, 48 * KiB);
        BufferAccount a = pool.account(group(2));
        BufferAccount b = pool.account(group(3));
        List<PooledBuffer> heldByB = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            assertNotNull(a.tryTake(4096));
            heldByB.add(b.tryTake(4096));
        }
        List<String> log = new ArrayList<>();
        for (int i = 0; i < 1000; i++) assertNull(a.take(4096, new RecordingWaiter("a", log)));
        assertNull(b.take(4096, new RecordingWaiter("b", log)));
        assertNull(pool.account(group(4)).tryTake(4096), "a newcomer queues behind the full pool's waiters");

        heldByB.removeFirst().release();
        assertEquals(List.of("a"), log);
        heldByB.removeFirst().release();
        assertEquals(List.of("a", "b"), log, "b's one waiter is served second, not after a's thousand");
        heldByB.removeFirst().release();
        assertEquals(List.of("a", "b", "a"), log);
        assertTrue(pool.residentBytes() <= 64 * KiB);
    }

    /**
     * A tryTake that clears cached memory and still finds no room must serve: a take that
     * queued meanwhile saw the pool full while that memory was neither cached nor free. The
     * tryTake is held between the two by the class's lock, which the clearing needs.
     */
    @Test
    void shouldServeAQueuedTakeFromMemoryThatAFailedTryTakeCleared() throws Exception {
        BufferPool pool = pool(16 * KiB, 16 * KiB);
        BufferAccount a = pool.account(group(2));
        BufferAccount b = pool.account(group(3));
        for (int i = 0; i < 3; i++) assertNotNull(b.tryTake(4096));
        PooledBuffer cached = a.tryTake(4096);
        SizeClass pages = cached.chunk.sizeClass;
        cached.release();                                   // the pool is full: 12 KiB in use, 4 KiB cached
        List<String> log = new ArrayList<>();
        RecordingWaiter waiter = new RecordingWaiter("b", log);
        PooledBuffer[] tried = new PooledBuffer[1];
        Thread trying;
        synchronized (pages) {
            trying = Thread.ofPlatform().start(() -> tried[0] = a.tryTake(8192));   // clears the 4 KiB, then no room
            while (pool.counter(BufferCounter.CLEARS) == 0 || trying.getState() != Thread.State.BLOCKED) Thread.onSpinWait();
            assertNull(b.take(4096, waiter), "the cached 4 KiB is being cleared: nothing free, nothing cached");
        }
        trying.join();
        assertNull(tried[0], "8 KiB do not fit beside 12 KiB");
        assertEquals(List.of("b"), log, "the cleared 4 KiB is free");
        assertEquals(0, b.waiting());
        assertEquals(16 * KiB, pool.residentBytes());
    }

    @Test
    void shouldNotHoldOthersUpForAnAccountWaitingOnItsOwnShare() {
        BufferPool pool = pool(MiB, 16 * KiB);
        BufferAccount a = pool.account(group(2));
        for (int i = 0; i < 4; i++) a.tryTake(4096);
        assertNull(a.take(4096, buffer -> { }));
        assertNotNull(pool.account(group(3)).tryTake(4096));
    }

    @Test
    void shouldReturnTheBufferFromTakeWhenThereIsRoomWithoutCallingTheWaiter() {
        BufferAccount account = pool(MiB, MiB).account(group(2));
        RecordingWaiter waiter = new RecordingWaiter("w", new ArrayList<>());
        assertNotNull(account.take(4096, waiter));
        assertEquals(0, waiter.received.size());
        assertEquals(0, account.waiting());
    }

    @Test
    void shouldCancelAQueuedWaiterAndReportOneAlreadyServed() {
        BufferPool pool = pool(MiB, 8 * KiB);
        BufferAccount account = pool.account(group(2));
        PooledBuffer held = account.tryTake(8192);
        List<String> log = new ArrayList<>();
        RecordingWaiter big = new RecordingWaiter("big", log);
        RecordingWaiter small = new RecordingWaiter("small", log);
        assertNull(account.take(8192, big));
        assertNull(account.take(4096, small));
        held.release();
        assertEquals(List.of("big"), log);
        assertFalse(account.cancel(big), "served: it owns the buffer");

        PooledBuffer bigBuffer = big.only();
        RecordingWaiter later = new RecordingWaiter("later", log);
        assertNull(account.take(4096, later));
        assertTrue(account.cancel(small));
        assertFalse(account.cancel(small), "only once");
        bigBuffer.release();
        assertEquals(List.of("big", "later"), log, "the cancelled waiter is never called");
        assertEquals(4096, account.inUseBytes());
    }

    @Test
    void shouldServeALongChainOfWaitersThatReleaseAtOnceWithoutRecursing() {
        BufferPool pool = pool(MiB, 4 * KiB);
        BufferAccount account = pool.account(group(2));
        PooledBuffer held = account.tryTake(4096);
        int[] served = {0};
        for (int i = 0; i < 100_000; i++) {
            assertNull(account.take(4096, buffer -> {
                served[0]++;
                buffer.release();          // serves the next one, from the same loop
            }));
        }
        held.release();
        assertEquals(100_000, served[0]);
        assertEquals(0, account.inUseBytes());
        assertEquals(0, account.waiting());
    }

    @Test
    void shouldReportAWaiterThatThrowsAndServeTheRest() {
        BufferPool pool = pool(MiB, 4 * KiB);
        BufferAccount account = pool.account(group(2));
        PooledBuffer held = account.tryTake(4096);
        List<String> log = new ArrayList<>();
        assertNull(account.take(4096, buffer -> {
            buffer.release();
            throw new IllegalStateException("test: a broken waiter");
        }));
        RecordingWaiter next = new RecordingWaiter("next", log);
        assertNull(account.take(4096, next));
        Thread.UncaughtExceptionHandler before = Thread.currentThread().getUncaughtExceptionHandler();
        List<Throwable> reported = new ArrayList<>();
        Thread.currentThread().setUncaughtExceptionHandler((thread, e) -> reported.add(e));
        try {
            held.release();
        } finally {
            Thread.currentThread().setUncaughtExceptionHandler(before);
        }
        assertEquals(1, reported.size());
        assertEquals(1, pool.counter(BufferCounter.WAITER_FAILURES));
        assertEquals(List.of("next"), log);
    }

    @Test
    void shouldKeepServingEveryAccountAfterAWaiterThrowsAnError() {
        BufferPool pool = pool(8 * KiB, 4 * KiB);
        BufferAccount account = pool.account(group(2));
        BufferAccount other = pool.account(group(3));
        PooledBuffer held = account.tryTake(4096);
        PooledBuffer otherHeld = other.tryTake(4096);
        PooledBuffer[] thrower = new PooledBuffer[1];
        assertNull(account.take(4096, buffer -> {
            thrower[0] = buffer;
            throw new StackOverflowError("test: a waiter out of stack");
        }));
        List<Throwable> reported = new ArrayList<>();
        Thread.UncaughtExceptionHandler before = Thread.currentThread().getUncaughtExceptionHandler();
        Thread.currentThread().setUncaughtExceptionHandler((thread, e) -> reported.add(e));
        try {
            held.release();                                     // serves the thrower: reported, not thrown
        } finally {
            Thread.currentThread().setUncaughtExceptionHandler(before);
        }
        assertEquals(1, reported.size());
        assertTrue(reported.getFirst() instanceof StackOverflowError);
        assertEquals(1, pool.counter(BufferCounter.WAITER_FAILURES));
        // The round ended normally: later takes of both accounts are served.
        List<String> log = new ArrayList<>();
        RecordingWaiter next = new RecordingWaiter("next", log);
        RecordingWaiter otherNext = new RecordingWaiter("other", log);
        assertNull(account.take(4096, next));
        assertNull(other.take(4096, otherNext));
        thrower[0].release();
        otherHeld.release();
        assertEquals(List.of("next", "other"), log);
        next.only().release();
        otherNext.only().release();
        assertEquals(0, pool.inUseBytes());
    }

    @Test
    void shouldGiveBackBuffersIdleForAFullTrimPeriod() {
        BufferPool pool = pool(64 * MiB, 64 * MiB);
        BufferAccount account = pool.account(group(2));
        PooledBuffer old = account.tryTake(MiB);
        PooledBuffer recent = account.tryTake(32 * MiB);
        touch(old);
        touch(recent);
        old.release();
        assertTrue(trim.armed(), "a release arms the trim timer");
        trim.runScheduled();                               // epoch 1: nothing idle a full period yet
        assertEquals(33 * MiB, pool.residentBytes());
        recent.release();
        trim.runScheduled();                               // epoch 2: `old` idle since before epoch 1
        assertEquals(32 * MiB, pool.residentBytes());
        assertEquals(1, pool.counter(BufferCounter.UNMAPS), "its chunk had no other live slot: unmapped");
        trim.runScheduled();                               // epoch 3
        assertEquals(0, pool.residentBytes());
        assertEquals(2, pool.counter(BufferCounter.UNMAPS));
        trim.runScheduled();
        assertFalse(trim.armed(), "nothing cached: no more passes");
        assertNotNull(account.tryTake(MiB), "maps again");
        assertEquals(3, pool.counter(BufferCounter.MAPS));
    }

    @Test
    void shouldUnmapAMappingClearedToMakeRoomAtTheNextPass() {
        BufferPool pool = pool(32 * MiB, 32 * MiB);
        BufferAccount account = pool.account(group(2));
        account.tryTake(32 * MiB).release();
        PooledBuffer small = account.tryTake(4096);        // clears the 32 MiB buffer, keeps its mapping
        assertEquals(1, pool.counter(BufferCounter.CLEARS));
        assertEquals(0, pool.counter(BufferCounter.UNMAPS));
        trim.runScheduled();
        assertEquals(1, pool.counter(BufferCounter.UNMAPS));
        small.release();
    }

    @Test
    void shouldUnmapOnCloseAndBuffersStillOutWhenReleased() {
        BufferPool pool = new BufferPool(64 * MiB, 64 * MiB, trim);
        BufferAccount account = pool.account(group(2));
        PooledBuffer out = account.tryTake(MiB);
        account.tryTake(2 * MiB).release();
        pool.close();
        assertEquals(MiB, pool.residentBytes());
        assertEquals(1, pool.counter(BufferCounter.UNMAPS));
        assertThrows(IllegalStateException.class, () -> account.tryTake(4096));
        ByteBuffer memory = out.buffer();
        out.release();
        assertEquals(0, pool.residentBytes());
        assertEquals(2, pool.counter(BufferCounter.UNMAPS));
        assertThrows(IllegalStateException.class, () -> memory.get(0), "used after unmap: an exception, not a crash");
    }
}
