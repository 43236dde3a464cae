package io.iotarget.iocontrol.policy.latency;

import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.policy.cost.CostPolicy;
import io.iotarget.iocontrol.policy.throttle.ThrottlePolicy;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.Errno;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * io.latency on a manual clock, with the numbers of the package documentation's worked
 * example: qd 256, a protected group {@code a} (target=2000) and a sibling {@code b} that
 * floods.
 */
class LatencyPolicyTest {
    private static final long MS = 1_000_000;

    private final ManualClock clock = new ManualClock(1_000 * MS);
    private final List<IoRequest> dispatched = new ArrayList<>();
    private IoController controller;
    private Device dev;
    private Group a;
    private Group b;

    @BeforeEach
    void setUp() throws ControlException {
        setUp(false);
    }

    private void setUp(boolean rotational) throws ControlException {
        controller = new IoController(clock, List.of(ThrottlePolicy::new,
                (c, i) -> new LatencyPolicy(c, i, rotational, true), CostPolicy::new));
        dev = new Device(0, new DeviceNumber(259, 0), "mem0", 1L << 40, 512, false, 1);
        controller.registerDevice(dev);                  // DEFAULT_QUEUE_DEPTH: 256
        controller.write("cgroup.subtree_control", "+io");
        a = controller.mkdir("a");
        b = controller.mkdir("b");
        controller.write("a/io.latency", "259:0 target=2000\n");
        dispatched.clear();
    }

    private IoRequest request(Group g, int flags) {
        return new IoRequest().set(IoOp.READ, flags, 0, 4096, null).target(dev, g);
    }

    /** Submits; the request lands in {@link #dispatched} when it passes, now or later. */
    private IoRequest submit(Group g, int flags) {
        IoRequest io = request(g, flags);
        if (controller.admit(io, clock.nanoTime())) dispatched.add(io);
        return io;
    }

    private long complete(IoRequest io) {
        io.status(IoStatus.OK);
        return controller.complete(io, clock.nanoTime(), dispatched::add);
    }

    /** {@code a} does {@code count} IOs one after another, each taking {@code latencyMs}. */
    private void protectedIos(int count, long latencyMs) {
        for (int i = 0; i < count; i++) {
            IoRequest io = submit(a, 0);
            assertTrue(dispatched.remove(io), "a is never throttled");
            clock.advance(latencyMs * MS);
            complete(io);
            controller.releaseDue(clock.nanoTime(), dispatched::add);
        }
    }

    private String stat(String group) throws ControlException {
        return controller.read(group + "/io.stat");
    }

    private int depth(String group) throws ControlException {
        Matcher m = Pattern.compile("depth=(\\d+|max)").matcher(stat(group));
        assertTrue(m.find(), stat(group));
        return m.group(1).equals("max") ? Integer.MAX_VALUE : Integer.parseInt(m.group(1));
    }

    @Test
    void shouldHalveTheSiblingsDepthWhenTheTargetIsMissedAndRaiseItWhenItIsMetAgain() throws ControlException {
        List<IoRequest> flood = new ArrayList<>();
        for (int i = 0; i < 300; i++) flood.add(submit(b, 0));
        assertEquals(300, dispatched.size(), "nobody is throttled before a misses");
        dispatched.clear();

        // 20 IOs of 5 ms: the window (100 ms) closes at the 20th, all missed.
        protectedIos(20, 5);
        assertTrue(stat("a").contains(" missed=0 total=0 depth=max"), stat("a"));
        IoRequest parked = submit(b, 0);
        assertFalse(dispatched.contains(parked), "b is over its new depth");
        assertEquals(128, depth("b"));

        // Misses for 500 ms more: summed, and the window closing at +600 ms moves the cookie again.
        protectedIos(80, 5);
        assertEquals(128, depth("b"), "no move within 500 ms of the last");
        protectedIos(20, 5);
        submit(b, 0);
        assertEquals(64, depth("b"));

        // b's completions let its waiters out only below its depth: 300 + 2 in flight or waiting, 64 allowed.
        for (int i = 0; i < 300 - 64; i++) complete(flood.get(i));
        assertTrue(dispatched.isEmpty(), "236 left: still 64 in flight");
        complete(flood.get(236));
        assertEquals(List.of(parked), dispatched);
        dispatched.clear();

        // a's IOs take 1 ms: 500 ms after the last move the victim scales its siblings back up, by 16.
        protectedIos(499, 1);
        submit(b, 0);
        assertEquals(64, depth("b"));
        protectedIos(2, 1);
        submit(b, 0);
        assertEquals(80, depth("b"));
    }

    @Test
    void shouldLetTheSiblingRecoverWhenTheVictimGoesIdle() throws ControlException {
        for (int i = 0; i < 300; i++) submit(b, 0);
        protectedIos(20, 5);
        submit(b, 0);
        assertEquals(128, depth("b"));
        long lastMove = clock.nanoTime();

        // a goes idle. The timer (armed by b's requests) forgets the victim 5 s after its move,
        // then steps the cookie up 16 a second; b follows on its next request.
        List<Integer> depths = new ArrayList<>();
        while (clock.nanoTime() - lastMove < 12_000 * MS) {
            clock.advance(100 * MS);
            controller.releaseDue(clock.nanoTime(), dispatched::add);
            submit(b, 0);
            int d = depth("b");
            if (depths.isEmpty() || depths.getLast() != d) depths.add(d);
        }
        // Cookie 1,000,000 - 64: four steps of 16 bring it back; b goes 128 -> 144 -> 160 -> 176 -> max.
        assertEquals(List.of(128, 144, 160, 176, Integer.MAX_VALUE), depths);
    }

    @Test
    void shouldNotThrottleAGroupWithATargetAsTightAsTheVictims() throws ControlException {
        controller.write("b/io.latency", "259:0 target=2000");
        for (int i = 0; i < 10; i++) submit(b, 0);
        protectedIos(20, 5);
        submit(b, 0);
        assertEquals(Integer.MAX_VALUE, depth("b"));
    }

    @Test
    void shouldDelayTheIssuerOnceDepthOneIsNotEnough() throws ControlException {
        // b has a target of its own, looser than a's: it can be throttled, but only once it has
        // samples (a group that did 5% or less of the IO is spared), and only a group with a
        // target is owed delay.
        controller.write("b/io.latency", "259:0 target=100000");   // window 1 s
        protectedIos(20, 5);                                       // first move, t0 + 100 ms
        List<IoRequest> first = new ArrayList<>();
        for (int i = 0; i < 400; i++) first.add(submit(b, 0));
        assertEquals(Integer.MAX_VALUE, depth("b"), "no samples yet: spared");
        clock.advance(1 * MS);
        for (int i = 0; i < 399; i++) complete(first.get(i));
        clock.set(1_000 * MS + 1_001 * MS);
        complete(first.get(399));                                  // b's window closes: 400 good samples
        IoRequest held = submit(b, 0);

        // Every further miss of a, 500 ms apart, halves b: 256 -> 1 in eight moves; the ninth finds it at 1.
        List<Integer> depths = new ArrayList<>();
        for (int round = 0; round < 200 && !stat("b").contains("use_delay"); round++) {
            protectedIos(10, 5);
            submit(b, IoFlags.META);
            if (depths.isEmpty() || depths.getLast() != depth("b")) depths.add(depth("b"));
        }
        assertEquals(List.of(128, 64, 32, 16, 8, 4, 2, 1), depths);
        assertTrue(stat("b").contains(" use_delay=1 delay_nsec=0 missed=0 total=0 depth=1"), stat("b"));

        // Metadata still passes; finishing 40 ms under b's target it is owed as 40 ms of delay,
        // and every completion of b is now held back from its issuer for that long.
        IoRequest meta = submit(b, IoFlags.META);
        assertTrue(dispatched.contains(meta), "metadata never waits");
        clock.advance(60 * MS);
        assertEquals(40 * MS, complete(meta));
        assertTrue(stat("b").contains(" use_delay=1 delay_nsec=40000000"), stat("b"));
        assertEquals(40 * MS, complete(held));
        // Once a second, what was already owed at the previous such point is forgiven: the
        // 40 ms, charged after it, are still owed a second later and gone a second after that.
        clock.advance(1_001 * MS);
        assertEquals(40 * MS, complete(submit(b, IoFlags.META)));
        clock.advance(1_001 * MS);
        assertEquals(0, complete(submit(b, IoFlags.META)));
    }

    @Test
    void shouldJudgeWindowsByTheirMeanOnARotationalDevice() throws ControlException {
        setUp(true);
        for (int i = 0; i < 10; i++) submit(b, 0);
        // The window closes at +103 ms on 18 IOs of 1 ms and one of 5 ms: one in 19 at the target
        // would miss on flash, but the mean, 1.21 ms, is fine. avg_lat = 1210526 × 3/2048 ns.
        protectedIos(18, 1);
        clock.advance(80 * MS);
        protectedIos(2, 5);
        submit(b, 0);
        assertEquals(Integer.MAX_VALUE, depth("b"));
        assertTrue(stat("a").contains(" depth=max avg_lat=1 win=100"), stat("a"));
        // The next window holds the second 5 ms IO and one of 3 ms: the mean, 4 ms, misses.
        clock.advance(400 * MS);
        protectedIos(1, 3);
        submit(b, 0);
        assertEquals(128, depth("b"));
    }

    @Test
    void shouldGiveBackTheSlotsOfACancelledRequest() throws ControlException {
        controller.write("b/cgroup.subtree_control", "+io");
        Group child = controller.mkdir("b/c");
        List<IoRequest> flood = new ArrayList<>();
        for (int i = 0; i < 128; i++) flood.add(submit(child, 0));
        protectedIos(20, 5);
        IoRequest waiting = submit(child, 0);          // b is now at 128: waits there, holding a slot at b/c
        assertFalse(dispatched.contains(waiting));
        assertTrue(controller.cancel(waiting, clock.nanoTime(), dispatched::add));
        IoRequest next = submit(child, 0);
        complete(flood.getFirst());
        assertTrue(dispatched.contains(next), "the slot came back");
    }

    @Test
    void shouldGiveBackTheSlotsOfARequestCancelledWhileIocostHeldIt() throws ControlException {
        controller.write("io.cost.model", "259:0 ctrl=user model=linear rbps=1048576 rseqiops=256 rrandiops=256"
                                          + " wbps=1048576 wseqiops=256 wrandiops=256");
        controller.write("io.cost.qos", "259:0 enable=1");
        List<IoRequest> sent = new ArrayList<>();
        for (int i = 0; i < 20; i++) sent.add(submit(b, 0));
        IoRequest heldByCost = sent.getLast();
        assertFalse(dispatched.contains(heldByCost), "over iocost's budget");
        LatencyGroup state = (LatencyGroup) b.deviceGroup(dev.index()).policyState(1);
        assertEquals(20, state.inflight, "io.latency passed all 20 on");
        assertTrue(controller.cancel(heldByCost, clock.nanoTime(), dispatched::add));
        assertEquals(19, state.inflight, "the cancelled request's slot is back");
    }

    @Test
    void shouldReadAndWriteTheFileAsLinux() throws ControlException {
        assertEquals("259:0 target=2000\n", controller.read("a/io.latency"));
        assertEquals("", controller.read("b/io.latency"));
        controller.write("a/io.latency", "259:0 target=010");
        assertEquals("259:0 target=10\n", controller.read("a/io.latency"), "decimal, as %llu");
        controller.write("a/io.latency", "mem0 target=max");
        assertEquals("", controller.read("a/io.latency"));
        controller.write("a/io.latency", "259:0 target=5 target=7\n");
        assertEquals("259:0 target=7\n", controller.read("a/io.latency"));
        controller.write("a/io.latency", "259:0 target=0");
        assertEquals("", controller.read("a/io.latency"));

        for (String bad : List.of("259:0 target=5 ", "259:0 target=5  target=6", "259:0 latency=5", "259:0 target",
                "259:0 =5", "259:0 target=", "259:0 target=-5", "259:0 target=+5", "259:0 target=5k", "259:0 target=5\tfoo",
                "259:0 target=5\n259:0 target=6", "259:0 target=18446744073709551616", "259:0 target=MAX",
                "259:0 aaaaaaaaaaaaaaaa=5", "259:0\n", "259:0 ")) {
            ControlException e = assertThrows(ControlException.class, () -> controller.write("a/io.latency", bad), bad);
            assertEquals(Errno.EINVAL, e.errno(), bad);
        }
        assertEquals(Errno.ENODEV, assertThrows(ControlException.class, () -> controller.write("a/io.latency", "259:7 target=5")).errno());
        assertEquals(Errno.ENOENT, assertThrows(ControlException.class, () -> controller.write("io.latency", "259:0 target=5")).errno());
        assertEquals("", controller.read("a/io.latency"), "nothing changed");
    }
}
