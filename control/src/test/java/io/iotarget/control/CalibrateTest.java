package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.http.ControlToken;
import io.iotarget.engine.Volume;
import io.iotarget.model.IoStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code iotarget calibrate} against a real server: on a null backend of known capacity
 * (null_blk's knobs) it finds that capacity and writes it with --apply; a device a tenant is
 * using is refused unless forced; bad requests get their errno. The accuracy itself (within 10%
 * of the model) is measured in bench/calibrate, not asserted here: a loaded machine makes the
 * device slower than its model, never faster, so the test holds the upper bound (10%: what
 * completes at the edges of a run's counting window) and only a loose lower one.
 */
class CalibrateTest {
    @TempDir
    Path dir;

    private record Cli(int code, String out, String err) {
    }

    private Cli cli(Server server, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        String[] full = new String[args.length + 2];
        full[0] = "--control";
        full[1] = "127.0.0.1:" + server.controlAddress().getPort();
        System.arraycopy(args, 0, full, 2, args.length);
        int code = Main.run(full, Map.of(ControlToken.DIRECTORY_ENV, dir.toString()), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Cli(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static long field(String text, String key) {
        Matcher m = Pattern.compile("\\b" + key + "=(\\d+)").matcher(text);
        assertTrue(m.find(), key + " in " + text);
        return Long.parseLong(m.group(1));
    }

    @Test
    void shouldFindTheCapacityOfANullBackendAndApplyIt() throws Exception {
        // completion_nsec=1 ms at queue_depth 10: 10,000 IOPS; mbps=200: 200 MiB/s (209.7 MB/s).
        String config = """
                { "server": { "control": "127.0.0.1:0" },
                  "backends": { "n": { "type": "null", "size": "1G", "completion_nsec": 1000000, "queue_depth": 10, "mbps": 200, "enable": 1 } } }
                """;
        try (Server server = Server.start(new ObjectMapper().readTree(config), dir)) {
            Cli c = cli(server, "calibrate", "n", "--seconds", "2", "--apply");
            assertEquals(0, c.code(), c.toString());
            assertTrue(c.err().contains("6 runs of 2 s at the device's depth 10 (1 MiB runs at 10), about 12 s"), c.err());
            assertTrue(c.err().contains("[6/6] wrandiops"), c.err());
            String[] lines = c.out().split("\n");
            assertEquals(2, lines.length, c.out());
            String model = lines[0];
            assertTrue(model.startsWith("259:0 ctrl=user model=linear rbps="), model);
            long bps = 200L << 20;
            for (String key : new String[]{"rbps", "wbps"}) {
                long found = field(model, key);
                assertTrue(found <= bps * 110 / 100 && found >= bps / 3, key + " " + found + " against the model's " + bps);
            }
            for (String key : new String[]{"rseqiops", "rrandiops", "wseqiops", "wrandiops"}) {
                long found = field(model, key);
                assertTrue(found <= 11_000 && found >= 3_000, key + " " + found + " against the model's 10000");
            }
            String qos = lines[1];
            assertTrue(qos.startsWith("259:0 enable=1 ctrl=user rpct=95.00 rlat="), qos);
            assertTrue(field(qos, "rlat") >= 1000 && field(qos, "wlat") >= 1000, "every request takes 1 ms: " + qos);
            assertTrue(c.err().contains("wrote io.cost.model") && c.err().contains("wrote io.cost.qos"), c.err());
            assertEquals(model + "\n", cli(server, "read", "io.cost.model").out());
            Cli readQos = cli(server, "read", "io.cost.qos");
            assertTrue(readQos.out().startsWith("259:0 enable=1 ctrl=user rpct=95.00 rlat=" + field(qos, "rlat") + " wpct=95.00 wlat=" + field(qos, "wlat")),
                    readQos.out());
            assertTrue(server.engine().controller().read("io.stat").isEmpty() || !server.engine().controller().read("io.stat").contains("rios="),
                    "calibrate charges no group: " + server.engine().controller().read("io.stat"));
            assertTrue(cli(server, "save").out().contains("\"completion_nsec\" : 1000000"), "the knobs are saved");
        }
    }

    @Test
    void shouldRefuseADeviceInUseUnlessForced() throws Exception {
        String config = """
                { "server": { "control": "127.0.0.1:0" },
                  "backends": { "m": { "type": "memory", "size": "16M", "queue_depth": 4, "enable": 1 },
                                "ro": { "type": "memory", "size": "16M", "readonly": 1, "enable": 1 } } }
                """;
        try (Server server = Server.start(new ObjectMapper().readTree(config), dir)) {
            Volume tenant = server.engine().open("m", server.engine().controller().root());
            assertEquals(IoStatus.OK, tenant.read(0, ByteBuffer.allocateDirect(4096)).get(10, TimeUnit.SECONDS));
            Cli busy = cli(server, "calibrate", "m", "--seconds", "1");
            assertEquals(1, busy.code(), busy.toString());
            assertTrue(busy.err().contains("EBUSY") && busy.err().contains("in use"), busy.err());
            assertEquals("", busy.out());

            Cli forced = cli(server, "calibrate", "259:0", "--seconds", "1", "--force");
            assertEquals(0, forced.code(), forced.toString());
            assertTrue(forced.out().startsWith("259:0 ctrl=user model=linear rbps="), forced.out());
            assertTrue(cli(server, "read", "io.cost.model").out().isEmpty(), "without --apply nothing is written");

            assertTrue(cli(server, "calibrate", "nothing").err().contains("ENODEV"));
            assertTrue(cli(server, "calibrate", "ro").err().contains("EROFS"));
            Cli bad = cli(server, "calibrate", "m", "--seconds", "0");
            assertEquals(1, bad.code());
            assertTrue(bad.err().contains("EINVAL") && bad.err().contains("seconds=0 (expected: 1..120)"), bad.err());
            assertEquals(2, cli(server, "calibrate").code(), "usage");
            assertTrue(cli(server, "help", "calibrate").out().contains("iocost_coef_gen.py"));
        }
    }
}
