package io.iotarget.frontend.nbd;

import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.ErrnoException;
import io.iotarget.backend.ForwardingBackend;
import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.model.IoStatus;
import io.iotarget.model.ViewSink;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** What a client reads when the backend fails: the errno it can act on, through the asynchronous path. */
class BackendErrorRepliesTest {
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
    void shouldMapEachStatusToItsErrno() {
        assertEquals(NbdWire.ENOSPC, Command.errno(IoStatus.NO_SPACE, NbdWire.CMD_WRITE));
        assertEquals(NbdWire.ENOSPC, Command.errno(IoStatus.NO_SPACE, NbdWire.CMD_WRITE_ZEROES));
        assertEquals(NbdWire.EIO, Command.errno(IoStatus.IO_ERROR, NbdWire.CMD_READ));
        assertEquals(NbdWire.EIO, Command.errno(IoStatus.IO_ERROR, NbdWire.CMD_FLUSH));
        assertEquals(NbdWire.EPERM, Command.errno(IoStatus.READ_ONLY, NbdWire.CMD_WRITE));
    }

    @Test
    void shouldReplyEnospcToAWriteOnAFullBackendAndEioToAFailedRead() throws Exception {
        try (TestTarget target = new TestTarget()) {
            target.export("failing", new FailingBackend(), false);
            for (boolean structured : new boolean[]{false, true}) {
                try (RawClient c = RawClient.connect(target.port, "failing", structured)) {
                    c.write(0, 1, 4096, new byte[4096]);
                    assertEquals(NbdWire.ENOSPC, c.reply(0).error(), "full: ENOSPC, structured=" + structured);
                    c.request(0, NbdWire.CMD_READ, 2, 0, 4096);
                    assertEquals(NbdWire.EIO, c.reply(4096).error(), "failed read: EIO, structured=" + structured);
                }
            }
            assertEquals(0, target.server.unexpectedErrors());
        }
    }
}
