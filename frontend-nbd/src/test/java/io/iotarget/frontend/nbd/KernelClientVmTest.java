package io.iotarget.frontend.nbd;

import io.iotarget.testkit.GuestVm;
import io.iotarget.model.Device;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The Linux kernel's NBD client (nbd.ko + nbd-client) in a QEMU guest (shared/vm, one boot):
 * write, read back, checksum match; and io.stat equal to the kernel's own counters for the
 * device. Skips only when the VM harness is absent (under CI=true it fails instead).
 */
class KernelClientVmTest {
    private static final long MiB = 1 << 20;

    @Test
    void kernelClientWritesReadsBackAndIsChargedWhatTheKernelCounted() throws Exception {
        GuestVm.require();
        try (TestTarget target = new TestTarget()) {
            CountingBackend backend = new CountingBackend(new io.iotarget.backend.memory.MemoryBackend(64 * MiB, 512, false));
            Device device = target.export("kernel", backend, false);
            GuestVm.Result r = GuestVm.run(GuestVm.script("nbd-kernel.sh"),
                    Map.of("NBD_PORT", Integer.toString(target.port), "NBD_EXPORT", "kernel", "RW_SIZE_MB", "4"), List.of(), 400);
            if (r.exitCode() != 0) fail("guest failed (exit " + r.exitCode() + "):\n" + r.text());
            assertTrue(r.text().contains("CHECK write-readback ok"), r.text());
            Matcher m = Pattern.compile("STAT (\\d+) (\\d+) (\\d+) (\\d+) (\\d+) (\\d+) (\\d+)").matcher(r.text());
            assertTrue(m.find(), r.text());
            long readIos = Long.parseLong(m.group(1)), readSectors = Long.parseLong(m.group(2));
            long writeIos = Long.parseLong(m.group(3)), writeSectors = Long.parseLong(m.group(4));
            long flushIos = Long.parseLong(m.group(7));
            Map<String, Long> stat = target.ioStat("tenants/kernel", device);
            assertEquals(4 * MiB, stat.get("wbytes"), "exactly the 4 MiB dd wrote: " + stat);
            assertEquals(writeSectors * 512, stat.get("wbytes"));
            assertEquals(readSectors * 512, stat.get("rbytes"), "every sector the kernel read (partition scan + read-back): " + stat);
            assertEquals(readIos, stat.get("rios"));
            // fsync's flush is an empty REQ_OP_WRITE|REQ_PREFLUSH bio: the kernel counts it as one
            // write I/O (and its flush request under flush I/Os); it reaches us as NBD_CMD_FLUSH,
            // which io.stat counts as one write IO of 0 bytes. So wios matches write I/Os exactly.
            assertEquals(writeIos, stat.get("wios"), "write I/Os, the empty preflush write included: " + stat);
            assertEquals(flushIos, backend.flushes.sum(), "each kernel flush arrived as one NBD_CMD_FLUSH");
            assertEquals(writeIos - flushIos, backend.writes.sum());
            assertEquals(0, target.server.unexpectedErrors());
        }
    }
}
