package io.iotarget.engine;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.Device;
import io.iotarget.model.IoStatus;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertEquals;

class EngineSmokeTest {
    @Test
    void shouldWriteReadAndCountInIoStat() throws Exception {
        try (Engine engine = new Engine()) {
            Device dev = engine.addDevice("mem0", new MemoryBackend(1 << 20, 512, false), null, 64);
            engine.controller().mkdir("tenants");
            engine.controller().write("cgroup.subtree_control", "+io");
            engine.controller().write("tenants/cgroup.subtree_control", "+io");
            Group a = engine.controller().mkdir("tenants/a");
            Volume v = engine.open("mem0", a);
            ByteBuffer src = ByteBuffer.allocateDirect(4096);
            for (int i = 0; i < 4096; i++) src.put(i, (byte) i);
            assertEquals(IoStatus.OK, v.write(8192, src, 0).get());
            ByteBuffer dst = ByteBuffer.allocateDirect(4096);
            assertEquals(IoStatus.OK, v.read(8192, dst).get());
            assertEquals(-1, src.mismatch(dst), "read back what was written");
            assertEquals(IoStatus.OK, v.flush().get());
            assertEquals(IoStatus.OK, v.discard(0, 65536).get());
            assertEquals(IoStatus.OUT_OF_RANGE, v.read(1 << 20, ByteBuffer.allocate(512)).get());
            assertEquals(dev.number() + " rbytes=4096 wbytes=4096 rios=1 wios=2 dbytes=65536 dios=1\n",
                    engine.controller().read("tenants/a/io.stat"));
            assertEquals(engine.controller().read("tenants/a/io.stat"), engine.controller().read("tenants/io.stat"));
        }
    }
}
