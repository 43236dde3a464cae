package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.config.Namespace;
import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.ErrnoException;
import io.iotarget.backend.ForwardingBackend;
import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.model.IoStatus;
import io.iotarget.model.ViewSink;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** What a host reads when the backend fails: Capacity Exceeded for a full file system, Internal Error for a failing disk. */
class BackendErrorStatusTest {
    private static final String NQN = "nqn.2026-11.io.iotarget:failing";

    /** Writes fail as a full file system does, reads as a failing disk; IO runs on the engine's IO threads. */
    private static final class FailingBackend extends ForwardingBackend {
        FailingBackend() {
            super(new MemoryBackend(1 << 20, 512, false));
        }

        @Override
        public boolean blocking() {
            return true;
        }

        @Override
        public void write(long offset, ByteBuffer src, boolean fua) throws ErrnoException {
            throw new ErrnoException("pwrite", BackendErrors.ENOSPC);
        }

        @Override
        public void read(long offset, ByteBuffer dst) throws ErrnoException {
            throw new ErrnoException("pread", BackendErrors.EIO);
        }

        /** Shares nothing, so that every read reaches {@link #read}. */
        @Override
        public boolean readViews(long offset, int length, ViewSink sink) {
            return false;
        }
    }

    @Test
    void shouldMapEachStatusToItsNvmeStatus() {
        assertEquals(0x081 | Status.DNR, Status.of(IoStatus.NO_SPACE), "SCT 0 / SC 0x81 Capacity Exceeded");
        assertEquals(0x006 | Status.DNR, Status.of(IoStatus.IO_ERROR), "SCT 0 / SC 0x06 Internal Error, as nvmet for EIO");
        assertEquals(0x020 | Status.DNR, Status.of(IoStatus.READ_ONLY), "Namespace Is Write Protected");
    }

    @Test
    void shouldAnswerCapacityExceededAndInternalErrorOverTheWire() throws Exception {
        try (TargetFixture f = new TargetFixture()) {
            f.engine.addDevice("failing", new FailingBackend(), null, 32);
            String s = "subsystems/" + NQN;
            f.tree.mkdir(s);
            f.tree.write(s + "/attr_allow_any_host", "1");
            f.tree.mkdir(s + "/namespaces/1");
            f.tree.write(s + "/namespaces/1/device_path", "failing");
            f.tree.write(s + "/namespaces/1/enable", "1");
            f.tree.link(s, "ports/1/subsystems/failing");
            try (TestHost admin = new TestHost(f.port, false, false)) {
                int cntlid = admin.bringUp(NQN, TestHost.HOST_NQN, 5000);
                try (TestHost io = new TestHost(f.port, false, false)) {
                    assertEquals(0, io.connect(NQN, TestHost.HOST_NQN, 1, cntlid, 32, 0, false).status());
                    assertEquals(Status.CAPACITY_EXCEEDED | Status.DNR, io.execute(io.lbaCommand(0x01, 1, 0, 8, 0), new byte[4096], 0, true).status());
                    assertEquals(Status.INTERNAL | Status.DNR, io.execute(io.lbaCommand(0x02, 1, 0, 8, 0), null, 4096, false).status());
                }
            }
        }
    }
}
