package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import io.iotarget.control.config.ConfigLoader;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 23 item 3 through the CLI and a real NBD client: a memory backend given a larger size
 * and a file grown on disk, each exported over NBD, are picked up on
 * {@code write /backends/NAME/revalidate_size 1}; nbdinfo's next connection sees the new size;
 * a shrink while exported is refused with EBUSY and changes nothing.
 */
class OnlineResizeTest {
    @TempDir
    Path dir;

    @Test
    void nbdClientsSeeTheNewSizeOnTheirNextConnection() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Path file = dir.resolve("disk.img");
        String text = """
                {"server": {"control": "127.0.0.1:0", "nbd": "127.0.0.1:0"},
                 "backends": {"mem": {"type": "memory", "size": "64M", "enable": 1},
                              "disk": {"type": "file", "path": "%s", "create": 1, "size": "8M", "enable": 1}},
                 "nbd": {"exports": {"mem": {"backend": "mem", "enable": 1}, "disk": {"backend": "disk", "enable": 1}}}}
                """.formatted(file);
        JsonNode config = ConfigLoader.parse(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), "test config");
        Path tokens = Files.createDirectory(dir.resolve("tokens"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        try (Server server = Server.start(config, tokens)) {
            String nbd = "nbd://127.0.0.1:" + server.nbdAddresses().getFirst().getPort() + "/";
            String control = ControlEndpoint.hostPort(server.controlAddress());
            assertEquals("67108864", size(nbd + "mem"));

            cli(tokens, control, 0, "write", "/backends/mem/size", "128M");
            assertEquals("67108864", size(nbd + "mem"), "a new size waits for revalidate_size");
            cli(tokens, control, 0, "write", "/backends/mem/revalidate_size", "1");
            assertEquals("134217728", size(nbd + "mem"));

            try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
                raf.setLength(24L << 20);
            }
            cli(tokens, control, 0, "write", "/backends/disk/revalidate_size", "1");
            assertEquals("25165824", size(nbd + "disk"));

            cli(tokens, control, 0, "write", "/backends/mem/size", "16M");
            String refused = cli(tokens, control, 1, "write", "/backends/mem/revalidate_size", "1");
            assertTrue(refused.contains("EBUSY") && refused.contains("would shrink"), refused);
            assertEquals("134217728", size(nbd + "mem"), "nothing changed");
        }
    }

    private static String size(String uri) throws Exception {
        return Tools.ok(30, "nbdinfo", "--size", uri).strip();
    }

    /** Runs the CLI in-process; returns its stderr, having checked its exit status. */
    private static String cli(Path tokens, String control, int status, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        String[] all = new String[args.length + 2];
        all[0] = "--control";
        all[1] = control;
        System.arraycopy(args, 0, all, 2, args.length);
        int code = Main.run(all, Map.of("IOTARGET_RUNTIME_DIR", tokens.toString()), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String text = err.toString(StandardCharsets.UTF_8);
        assertEquals(status, code, String.join(" ", args) + ": " + text);
        return text;
    }
}
