package io.iotarget.engine;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.Device;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoStatus;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The embedded Java API: who pays, what comes back, and that waiting holds no threads. */
class EmbeddedApiTest {
    private Engine engine;
    private Device dev;
    private Group a;
    private Group b;

    @BeforeEach
    void setUp() throws Exception {
        engine = new Engine();
        dev = engine.addDevice("mem0", new MemoryBackend(64 << 20, 512, false), null, 64);
        engine.controller().mkdir("a");
        engine.controller().mkdir("b");
        a = engine.controller().group("a");
        b = engine.controller().group("b");
    }

    @AfterEach
    void tearDown() {
        engine.close();
    }

    private String stat(String group) throws Exception {
        return engine.controller().read(group + "/io.stat");
    }

    @Test
    void shouldChargeTheCallersCurrentGroup() throws Exception {
        Volume v = engine.open("mem0", null);
        ByteBuffer buf = ByteBuffer.allocateDirect(8192);
        IoStatus status = ScopedValue.where(Engine.CURRENT_GROUP, b).call(() -> v.write(0, buf, 0).get());
        assertEquals(IoStatus.OK, status);
        assertEquals(IoStatus.OK, v.read(0, buf.clear()).get(), "unbound: the root pays");
        assertEquals("259:0 rbytes=0 wbytes=8192 rios=0 wios=1 dbytes=0 dios=0\n", stat("b"));
        assertEquals("", stat("a"));
        assertEquals("259:0 rbytes=8192 wbytes=8192 rios=1 wios=1 dbytes=0 dios=0\n", engine.controller().read("io.stat"));
    }

    @Test
    void shouldChargePassthroughAndInternalCopies() throws Exception {
        Volume v = engine.open("mem0", a);
        ByteBuffer data = ByteBuffer.allocateDirect(4096);
        for (int i = 0; i < 4096; i++) data.put(i, (byte) (i * 7));
        assertEquals(IoStatus.OK, v.submit(IoOp.PASSTHROUGH_OUT, 0, 4096, 4096, data).get());
        assertEquals(IoStatus.OK, v.copy(4096, 1 << 20, 4096).get());
        ByteBuffer back = ByteBuffer.allocateDirect(4096);
        assertEquals(IoStatus.OK, v.submit(IoOp.PASSTHROUGH_IN, 0, 1 << 20, 4096, back).get());
        assertEquals(-1, data.mismatch(back), "the copy moved the bytes");
        // passthrough write 4096 + copy (read 4096 + write 4096) + passthrough read 4096
        assertEquals("259:0 rbytes=8192 wbytes=8192 rios=2 wios=2 dbytes=0 dios=0\n", stat("a"));
    }

    @Test
    void shouldReportRefusalsWithoutCharging() throws Exception {
        Volume v = engine.open("mem0", a);
        assertEquals(IoStatus.OUT_OF_RANGE, v.read(64 << 20, ByteBuffer.allocate(512)).get());
        assertEquals(IoStatus.INVALID, v.submit(IoOp.WRITE, 0, 0, 4096, ByteBuffer.allocate(10)).get());
        assertEquals("", stat("a"));
    }

    @Test
    void shouldParkTenThousandThrottledRequestsWithoutThreads() throws Exception {
        engine.controller().write("a/io.max", "259:0 riops=100");
        Volume v = engine.open("mem0", a);
        int before = Thread.activeCount();
        List<CompletableFuture<IoStatus>> all = new ArrayList<>();
        ByteBuffer buf = ByteBuffer.allocateDirect(512);
        for (int i = 0; i < 20_000; i++) all.add(v.read(0, buf.duplicate()));
        long waiting = all.stream().filter(f -> !f.isDone()).count();
        assertTrue(waiting >= 19_900, "a full bucket at 100 IOPS lets one through; the rest wait: " + waiting);
        assertTrue(Thread.activeCount() <= before + 2, "parked requests hold no threads: " + before + " -> " + Thread.activeCount());
        engine.controller().write("a/io.max", "259:0 riops=max");
        for (CompletableFuture<IoStatus> f : all) assertEquals(IoStatus.OK, f.get());
        assertEquals("259:0 rbytes=10240000 wbytes=0 rios=20000 wios=0 dbytes=0 dios=0\n", stat("a"));
    }

    @Test
    void shouldFailParkedRequestsWhenTheEngineCloses() throws Exception {
        engine.controller().write("a/io.max", "259:0 riops=10");
        Volume v = engine.open("mem0", a);
        List<CompletableFuture<IoStatus>> all = new ArrayList<>();
        for (int i = 0; i < 50; i++) all.add(v.read(0, ByteBuffer.allocateDirect(512)));
        engine.close();
        long aborted = 0;
        for (CompletableFuture<IoStatus> f : all) {
            IoStatus status = f.get(5, java.util.concurrent.TimeUnit.SECONDS);
            if (status == IoStatus.ABORTED) aborted++;
            else assertEquals(IoStatus.OK, status);
        }
        assertTrue(aborted >= 40, "requests still parked at close fail instead of waiting forever: " + aborted);
    }
}
