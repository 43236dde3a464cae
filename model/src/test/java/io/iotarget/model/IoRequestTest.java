package io.iotarget.model;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The one shape of an IO: reused across IOs, so a reset must leave nothing of the last one. */
class IoRequestTest {
    private static final Device DEVICE = new Device(0, new DeviceNumber(259, 3), "disk", 1 << 20, 512, false, 1);
    private static final IoGroup GROUP = new IoGroup() {
        @Override
        public long id() {
            return 5;
        }

        @Override
        public String path() {
            return "/tenants/a";
        }
    };
    private static final IoQueue QUEUE = new IoQueue() {
    };

    /** Every field set to something other than its reset value. */
    private static IoRequest everythingSet() {
        IoRequest r = new IoRequest();
        IoCallback callback = request -> {
        };
        assertSame(r, r.set(IoOp.WRITE, IoFlags.FUA | IoFlags.META, 4096, 512, ByteBuffer.allocate(512))
                .target(DEVICE, GROUP).callback(callback, "handle", 42).views(bytes -> {
                }).dataLater().queue(QUEUE).data(ByteBuffer.allocate(512)), "each setter returns the request, for chaining");
        r.status(IoStatus.IO_ERROR);
        r.submitNs(1);
        r.admitNs(2);
        r.issueNs(3);
        r.completeNs(4);
        r.policyFlags(5);
        r.policyCost(6);
        r.policyStartNs(7);
        r.policyHeldSinceNs(8);
        r.policyGroup("state");
        return r;
    }

    @Test
    void shouldLeaveNothingOfTheLastIoAfterReset() {
        IoRequest used = everythingSet();
        used.reset();
        IoRequest fresh = new IoRequest();
        for (IoRequest r : new IoRequest[]{used, fresh}) {
            assertNull(r.op());
            assertEquals(0, r.flags());
            assertEquals(0, r.offset());
            assertEquals(0, r.length());
            assertNull(r.data());
            assertNull(r.device());
            assertNull(r.group());
            assertNull(r.callback());
            assertNull(r.attachment());
            assertEquals(0, r.tag());
            assertNull(r.views());
            assertFalse(r.isDataLater());
            assertNull(r.queue());
            assertNull(r.status());
            assertEquals(0, r.submitNs() + r.admitNs() + r.issueNs() + r.completeNs());
            assertEquals(0, r.policyFlags());
            assertEquals(0, r.policyCost());
            assertEquals(0, r.policyStartNs());
            assertEquals(0, r.policyHeldSinceNs());
            assertNull(r.policyGroup());
        }
        assertEquals(fresh.toString(), used.toString());
    }

    @Test
    void shouldKeepWhatItWasGiven() {
        IoRequest r = everythingSet();
        assertEquals(IoOp.WRITE, r.op());
        assertEquals(4096, r.offset());
        assertEquals(512, r.length());
        assertSame(DEVICE, r.device());
        assertSame(GROUP, r.group());
        assertEquals("handle", r.attachment());
        assertEquals(42, r.tag());
        assertTrue(r.isDataLater());
        assertSame(QUEUE, r.queue());
        assertEquals(IoStatus.IO_ERROR, r.status());
        assertEquals(4, r.completeNs());
        assertEquals("state", r.policyGroup());
    }

    @Test
    void shouldTestEachFlagOnItsOwn() {
        IoRequest r = new IoRequest().set(IoOp.WRITE_ZEROES, IoFlags.NO_UNMAP | IoFlags.FAST_ZERO, 0, 4096, null);
        assertTrue(r.hasFlag(IoFlags.NO_UNMAP));
        assertTrue(r.hasFlag(IoFlags.FAST_ZERO));
        assertTrue(r.hasFlag(IoFlags.NO_UNMAP | IoFlags.FUA), "any of several");
        assertFalse(r.hasFlag(IoFlags.FUA));
        assertFalse(r.hasFlag(0));
    }

    @Test
    void shouldTakeItsDataLaterInPlaceOfNone() {
        IoRequest r = new IoRequest().set(IoOp.WRITE, 0, 0, 512, null).dataLater();
        assertNull(r.data(), "admitted before its data");
        ByteBuffer data = ByteBuffer.allocate(512);
        r.data(data);
        assertSame(data, r.data());
        assertEquals(512, r.length(), "data() changes the buffer, not the IO");
    }

    @Test
    void shouldDescribeItselfForLogs() {
        IoRequest r = new IoRequest().set(IoOp.READ, IoFlags.SYNC | IoFlags.PREFLUSH, 8192, 4096, null).target(DEVICE, GROUP);
        assertEquals("READ dev=259:3 group=/tenants/a off=8192 len=4096 flags=0x6", r.toString());
        r.status(IoStatus.OUT_OF_RANGE);
        assertEquals("READ dev=259:3 group=/tenants/a off=8192 len=4096 flags=0x6 status=OUT_OF_RANGE", r.toString());
        assertEquals("null dev=- group=- off=0 len=0 flags=0x0", new IoRequest().toString(), "an empty request, without a NullPointerException");
    }
}
