package io.iotarget.frontend.nbd;

import io.iotarget.testkit.Tools;
import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.model.Device;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.iotarget.frontend.nbd.TestTarget.delta;
import static io.iotarget.frontend.nbd.TestTarget.stat;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The clients people already use, against the server in this JVM. Each test gets its own
 * export and group, checks the data, and checks io.stat twice: against what the client moved
 * (where the client's behaviour fixes it) and against what really reached the backend.
 */
class RealClientsTest {
    private static final long MiB = 1 << 20;
    private static final AtomicInteger EXPORTS = new AtomicInteger();
    private static TestTarget target;

    @TempDir
    Path dir;

    @BeforeAll
    static void start() throws Exception {
        target = new TestTarget();
    }

    @AfterAll
    static void stop() {
        assertEquals(0, target.server.unexpectedErrors());
        target.close();
    }

    /** A fresh export on a counting memory backend, charged to its own group. */
    private record Export(String name, Device device, CountingBackend backend) {
        String uri() {
            return target.uri(name);
        }

        Map<String, Long> stat() throws Exception {
            return target.ioStat("tenants/" + name, device);
        }

        /** io.stat equals what reached the backend. */
        void assertChargedWhatMoved() throws Exception {
            backend.assertCharged(stat(), "io.stat of tenants/" + name + " vs what the backend saw");
        }
    }

    private static Export export(long size) throws Exception {
        String name = "e" + EXPORTS.incrementAndGet();
        CountingBackend backend = new CountingBackend(new MemoryBackend(size, 512, false));
        return new Export(name, target.export(name, backend, false), backend);
    }

    private Path randomFile(String name, long size, long seed, boolean withHoles) throws Exception {
        Path p = dir.resolve(name);
        byte[] b = new byte[(int) size];
        new Random(seed).nextBytes(b);
        if (withHoles) java.util.Arrays.fill(b, (int) (size / 4), (int) (size / 2), (byte) 0);
        Files.write(p, b);
        return p;
    }

    @Test
    void qemuImgConvertsAndComparesAgainstTheExport() throws Exception {
        Tools.require("qemu-img", "/usr/bin/qemu-img");
        Export e = export(16 * MiB);
        Path src = randomFile("src.img", 16 * MiB, 1, true);
        Tools.ok(120, "qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", src.toString(), e.uri());
        String compare = Tools.ok(120, "qemu-img", "compare", "-f", "raw", "-F", "raw", src.toString(), e.uri());
        assertTrue(compare.contains("Images are identical"), compare);
        Map<String, Long> s = e.stat();
        assertTrue(s.get("wbytes") >= 12 * MiB, "at least the data was written: " + s);
        assertTrue(s.get("rbytes") >= 12 * MiB, "compare read at least the data back: " + s);
        e.assertChargedWhatMoved();
        Tools.ok(60, "qemu-img", "create", "-f", "raw", dir.resolve("blank.img").toString(), "16M");
        assertEquals(1, Tools.run(60, java.util.List.of("qemu-img", "compare", "-q", "-f", "raw", "-F", "raw",
                dir.resolve("blank.img").toString(), e.uri())).exit(), "compare sees a difference");
    }

    @Test
    void qemuIoWritesReadsDiscardsAndZeroes() throws Exception {
        Tools.require("qemu-io", "/usr/bin/qemu-io");
        Export e = export(4 * MiB);
        String out = Tools.ok(60, "qemu-io", "-f", "raw", e.uri(),
                "-c", "write -P 0xab 0 64k", "-c", "read -P 0xab 0 64k", "-c", "flush",
                "-c", "discard 1M 128k", "-c", "write -z 2M 64k", "-c", "read -P 0 2M 64k",
                "-c", "write -P 0xcd -f 3M 4k", "-c", "read -P 0xcd 3M 4k");
        assertTrue(!out.contains("Pattern verification failed") && !out.contains("error"), out);
        // Writes: 64k, 64k of zeroes, 4k with FUA; reads 64k + 64k + 4k; one 128k discard;
        // two flushes: the "flush" command and the one qemu's block layer sends when it closes.
        assertEquals(stat(132 * 1024, 132 * 1024, 3, 5, 128 * 1024, 1), e.stat());
        e.assertChargedWhatMoved();
    }

    @Test
    void nbdinfoMapsAllocationWithoutBeingCharged() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Export e = export(8 * MiB);
        ByteBuffer data = ByteBuffer.allocateDirect((int) MiB);
        e.backend.write(2 * MiB, data, false);            // allocate [2M, 3M) behind the server's back
        Map<String, Long> before = e.stat();
        String map = Tools.ok(60, "nbdinfo", "--map", e.uri());
        assertTrue(map.matches("(?s)\\s*0\\s+2097152\\s+3\\s+hole,zero\\s+2097152\\s+1048576\\s+0\\s+data\\s+3145728\\s+5242880\\s+3\\s+hole,zero\\s*"), map);
        assertEquals(before, e.stat(), "BLOCK_STATUS is not charged");
        String info = Tools.ok(60, "nbdinfo", "--json", e.uri());
        assertTrue(info.contains("\"export-size\": 8388608") && info.contains("\"can_multi_conn\": true"), info);
    }

    @Test
    void nbdcopyCopiesInAndOutExactly() throws Exception {
        Tools.require("nbdcopy", "/usr/bin/nbdcopy");
        Export e = export(8 * MiB);
        Path src = randomFile("in.img", 8 * MiB, 2, false);
        Tools.ok(120, "nbdcopy", src.toString(), e.uri());
        Map<String, Long> afterIn = e.stat();
        assertEquals(8 * MiB, afterIn.get("wbytes"), "every byte of the file written once: " + afterIn);
        Path back = dir.resolve("out.img");
        Tools.ok(120, "nbdcopy", e.uri(), back.toString());
        assertArrayEquals(Files.readAllBytes(src), Files.readAllBytes(back));
        assertEquals(8 * MiB, delta(afterIn, e.stat()).get("rbytes"), "every byte read once");
        e.assertChargedWhatMoved();
    }

    @Test
    void pythonLibnbdDrivesEveryCommand() throws Exception {
        Tools.require("python3 with libnbd", "/usr/lib/python3/dist-packages/nbd.py");
        Export e = export(4 * MiB);
        String script = String.join("\n",
                "import nbd",
                "h = nbd.NBD()",
                "h.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)",
                "h.connect_uri('" + e.uri() + "')",
                "assert h.get_structured_replies_negotiated()",
                "buf = bytes(range(256)) * 4096",
                "h.pwrite(buf, 0)",
                "assert h.pread(len(buf), 0) == buf",
                "h.flush()",
                "h.trim(65536, 2*1024*1024)",
                "h.zero(65536, 3*1024*1024, nbd.CMD_FLAG_NO_HOLE)",
                "h.cache(4096, 0)",
                "ext = []",
                "h.block_status(4*1024*1024, 0, lambda ctx, off, e, err: ext.extend(e))",
                "assert sum(ext[0::2]) == 4*1024*1024, ext",
                "h.set_strict_mode(0)",                  // let the server, not libnbd, judge the range
                "try:",
                "    h.pread(512, 4*1024*1024)",
                "    raise SystemExit('read past the end succeeded')",
                "except nbd.Error as err:",
                "    assert 'command failed: Invalid argument' in str(err), err",   // the server's EINVAL
                "h.shutdown()",
                "print('PYTHON-OK')");
        String out = Tools.ok(60, "/usr/bin/python3", "-c", script);
        assertTrue(out.contains("PYTHON-OK"), out);
        assertEquals(stat(MiB + 4096, MiB + 65536, 2, 3, 65536, 1), e.stat());
        e.assertChargedWhatMoved();
    }

    @Test
    void fioNbdEngineWritesAndVerifies() throws Exception {
        Tools.requireFioNbd();
        Export e = export(16 * MiB);
        String json = Tools.ok(120, "fio", "--name=verify", "--ioengine=nbd", "--uri=" + e.uri(), "--rw=randwrite",
                "--bs=4k", "--iodepth=32", "--size=16M", "--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--verify_state_save=0",
                "--output-format=json");
        long written = jsonLong(json, "write", "io_bytes");
        long read = jsonLong(json, "read", "io_bytes");
        assertEquals(16 * MiB, written);
        assertEquals(16 * MiB, read, "verify read everything back");
        Map<String, Long> s = e.stat();
        assertEquals(written, s.get("wbytes"));
        assertEquals(read, s.get("rbytes"));
        assertEquals(4096L, s.get("wios"));
        assertEquals(4096L, s.get("rios"));
        e.assertChargedWhatMoved();
    }

    /** {@code "<direction>" : { ... "<key>" : N} } from fio's JSON (first job). */
    static long jsonLong(String json, String direction, String key) {
        Matcher m = Pattern.compile("\"" + direction + "\"\\s*:\\s*\\{[^}]*?\"" + key + "\"\\s*:\\s*(\\d+)").matcher(json);
        assertTrue(m.find(), direction + "." + key + " in " + json);
        return Long.parseLong(m.group(1));
    }
}
