package io.iotarget.engine;

import io.iotarget.iocontrol.IoController;
import io.iotarget.model.CountedErrorHandler;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How long the releaser parks when a configuration change has just resumed a parked request
 * (here: its group removed, which flushes what io.max held):
 * the controller then reports {@code Long.MIN_VALUE} (due now), and the releaser must run
 * again at once. It once computed the park as that time minus the clock, which wraps round to
 * centuries on any clock past zero: every parked request of every tenant waited for ever (seen
 * as io.latency's recovery stopping in LatencyTargetTest).
 */
class ReleaserWakeTest {
    @Test
    void shouldRunAgainAtOnceWhenAResumedRequestIsReady() throws Exception {
        ManualClock clock = new ManualClock(1_000_000_000_000L);
        IoController controller = new IoController(clock, Engine.STANDARD_POLICIES);
        Device device = new Device(0, new DeviceNumber(259, 0), "mem0", 1L << 30, 512, false, 1);
        controller.registerDevice(device);
        controller.write("cgroup.subtree_control", "+io");
        controller.mkdir("a");
        controller.write("a/io.max", "259:0 riops=2");
        int admitted = 0;
        while (admitted < 10 && controller.admit(read(device, controller), clock.nanoTime())) admitted++;
        assertTrue(admitted < 10, "a read beyond the budget waits for io.max");

        controller.rmdir("a");                  // its parked read is flushed out, for the releaser to hand on
        assertEquals(Long.MIN_VALUE, controller.nextReleaseNs(), "a request is ready now");

        CountedErrorHandler errors = new CountedErrorHandler("ReleaserWakeTest");
        Releaser releaser = new Releaser(controller, new HeldCompletions(errors, io -> { }), clock, io -> { }, errors);
        assertEquals(0, releaser.publishNextWake(), "runs again at once");
    }

    private static IoRequest read(Device device, IoController controller) throws Exception {
        return new IoRequest().set(IoOp.READ, 0, 0, 4096, null).target(device, controller.group("a"));
    }
}
