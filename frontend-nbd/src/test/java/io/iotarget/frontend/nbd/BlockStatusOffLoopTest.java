package io.iotarget.frontend.nbd;

import io.iotarget.backend.ForwardingBackend;
import io.iotarget.backend.memory.MemoryBackend;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A BLOCK_STATUS whose map is a network round trip (RBD's rbd_diff_iterate2) must not hold the
 * connection's loop: the READ sent after it is answered while the map still waits, and the map's
 * answer follows when it ends. Before the map ran off the loop, the READ waited for it.
 */
class BlockStatusOffLoopTest {
    private static final int SIZE = 1 << 20;
    private final CountDownLatch mapMayEnd = new CountDownLatch(1);
    private TestTarget target;

    /** Memory whose map waits for the test, and runs on a thread of its own, as RbdBackend's does. */
    private final class SlowMap extends ForwardingBackend {
        SlowMap() {
            super(new MemoryBackend(SIZE, 512, false));
        }

        @Override
        public void mapExtents(long offset, long length, ExtentSink sink) throws IOException {
            try {
                mapMayEnd.await();
            } catch (InterruptedException e) {
                throw new IOException(e);
            }
            super.mapExtents(offset, length, sink);
        }

        @Override
        public void startMapExtents(long offset, long length, ExtentSink sink, Consumer<IOException> done) {
            Thread.ofPlatform().daemon().start(() -> {
                IOException failure = null;
                try {
                    mapExtents(offset, length, sink);
                } catch (IOException e) {
                    failure = e;
                }
                done.accept(failure);
            });
        }
    }

    @BeforeEach
    void start() throws Exception {
        target = new TestTarget();
        target.export("disk", new SlowMap(), false);
    }

    @AfterEach
    void stop() {
        mapMayEnd.countDown();                             // a failed test must not leave a map waiting
        assertEquals(0, target.server.unexpectedErrors());
        target.close();
    }

    @Test
    void shouldAnswerReadWhileBlockStatusWaitsForTheBackend() throws Exception {
        try (RawClient c = RawClient.connect(target.port, "disk", true)) {
            c.request(0, NbdWire.CMD_BLOCK_STATUS, 1, 0, SIZE);
            c.request(0, NbdWire.CMD_READ, 2, 0, 4096);
            RawClient.Reply first = c.reply(4096);
            assertEquals(2, first.cookie(), "the READ is answered first: the map still waits, off the loop");
            assertEquals(0, first.error());
            while (first.cookie() == 2 && (first.chunkFlags() & NbdWire.REPLY_FLAG_DONE) == 0) first = c.reply(4096);

            mapMayEnd.countDown();
            RawClient.Reply status = c.reply(0);
            assertEquals(1, status.cookie());
            assertEquals(NbdWire.REPLY_TYPE_BLOCK_STATUS, status.chunkType());
            ByteBuffer b = ByteBuffer.wrap(status.payload());
            assertEquals(NbdWire.BASE_ALLOCATION_ID, b.getInt());
            long covered = 0;
            while (b.hasRemaining()) {
                covered += Integer.toUnsignedLong(b.getInt());
                b.getInt();
            }
            assertEquals(SIZE, covered, "the extents cover the request");
        }
    }
}
