package io.iotarget.iocontrol;

import io.iotarget.iocontrol.policy.throttle.ThrottleCounter;
import io.iotarget.model.Counters;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every parked request comes out again, whatever configuration or tree change frees it. */
class ParkedRequestsTest {
    @Test
    void shouldReleaseEveryParkedRequestOfANestedGroupWhenItsDeviceGoes() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group b = h.group("a/b");
        h.controller.write("a/io.max", "259:0 riops=2");
        h.controller.write("a/b/io.max", "259:0 riops=2");
        List<IoRequest> parked = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            IoRequest io = h.request(IoOp.READ, 4096, h.dev0, b);
            if (!h.submit(io)) parked.add(io);
        }
        // At 2 IOPS the first request finds full buckets and goes; the other two wait in b's queue.
        assertEquals(2, parked.size());
        Counters<ThrottleCounter> throttle = h.controller.policyCounters(h.dev0).get("throttle").as(ThrottleCounter.class);
        assertEquals(2, throttle.counter(ThrottleCounter.QUEUED));
        assertEquals(2, throttle.counter(ThrottleCounter.DELAYED));
        assertEquals(0, h.controller.policyCounters(h.dev1).get("throttle").as(ThrottleCounter.class).counter(ThrottleCounter.QUEUED), "each device has its own");

        List<IoRequest> released = new ArrayList<>();
        h.controller.unregisterDevice(h.dev0, h.clock.nanoTime(), released::add);
        assertEquals(0, throttle.counter(ThrottleCounter.QUEUED), "nothing waits on a device that went away");
        assertEquals(2, throttle.counter(ThrottleCounter.DELAYED));
        assertTrue(h.controller.policyCounters(h.dev0).isEmpty(), "nor is it listed");

        List<IoRequest> out = new ArrayList<>(released);
        out.addAll(h.dispatched);
        for (IoRequest io : parked) assertEquals(1, out.stream().filter(r -> r == io).count(), "parked request came out once");
    }
}
