package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.config.ConfigLoader;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.http.ControlClient;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.control.tree.CgroupTree;
import io.iotarget.testkit.Tools;
import io.iotarget.testkit.Prerequisites;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What {@code server.state} can hold and whom it trusts: the deepest group the tree allows
 * survives save, the state file and a restart, one level deeper is refused at mkdir; a config
 * or state file nested too deep, or not JSON, is an error that names the file and the place;
 * a state file another user could have written is refused.
 */
class StateFileLimitsTest {
    private static final String TWO_DISKS = """
            "backends": { "a": { "type": "memory", "size": "1M", "enable": 1 }, "b": { "type": "memory", "size": "1M", "enable": 1 } }""";

    @TempDir
    Path dir;

    private Server start(Path state, String trees) throws Exception {
        return Server.start(new ObjectMapper().readTree("""
                { "server": { "control": "127.0.0.1:0", "state": "%s" }%s }""".formatted(state, trees.isEmpty() ? "" : ", " + trees)), dir);
    }

    private ControlClient client(Server server) throws Exception {
        return ControlClient.connect(ControlEndpoint.hostPort(server.controlAddress()), null, dir, null);
    }

    private static void ok(ControlClient.Reply reply) {
        assertTrue(reply.ok(), reply.status() + " " + reply.body());
    }

    /**
     * A chain of groups {@link CgroupTree#MAX_DEPTH} deep, io enabled all the way down and io.max
     * on two devices at the bottom (an array: the deepest a save nests). Saved, kept in the
     * state file through compactions, and back after a restart; a group below it is refused.
     */
    @Test
    void shouldKeepTheDeepestGroupAndRefuseOneDeeper() throws Exception {
        Path state = dir.resolve("state.json");
        StringBuilder path = new StringBuilder("d");
        String ioMax;
        try (Server server = start(state, TWO_DISKS)) {
            ControlClient client = client(server);
            ok(client.post("write", "cgroup.subtree_control", null, "+io"));
            ok(client.post("mkdir", path.toString(), null, null));
            for (int depth = 2; depth <= CgroupTree.MAX_DEPTH; depth++) {
                ok(client.post("write", path + "/cgroup.subtree_control", null, "+io"));
                path.append("/d");
                ok(client.post("mkdir", path.toString(), null, null));
            }
            ok(client.post("write", path + "/io.max", null, "a rbps=1000000"));
            ok(client.post("write", path + "/io.max", null, "b wiops=50"));
            ioMax = client.get("read", path + "/io.max").body();
            assertEquals(2, ioMax.lines().count(), ioMax);

            ControlClient.Reply deeper = client.post("mkdir", path + "/d", null, null);
            assertEquals("EAGAIN", deeper.errno(), deeper.body());
            assertTrue(deeper.body().contains("a group at depth " + (CgroupTree.MAX_DEPTH + 1) + " is deeper than any may be, "
                                              + CgroupTree.MAX_DEPTH + " (the most a saved configuration holds)"), deeper.body());
            ControlClient.Reply saved = client.get("save", null);
            assertEquals(200, saved.status(), saved.body());
            ok(client.post("mkdir", "unrelated", null, null));        // every change after it is kept as before
            assertTrue(Files.exists(dir.resolve("state.json.prev")), "the journal was compacted on the way down");
        }
        try (Server server = start(state, TWO_DISKS)) {
            assertTrue(server.summary().stream().anyMatch(l -> l.endsWith("(restored from it)")), server.summary().toString());
            assertEquals(ioMax, server.mounts().read(path + "/io.max"));
            assertTrue(server.mounts().list("").contains("unrelated/"));
        }
        ConfigLoader.parse(state);                                      // the snapshot the restart wrote reads back
    }

    /** A config one group deeper than the tree allows is refused by the tree; one far deeper by the parser, with its place. */
    @Test
    void shouldRefuseAConfigTooDeepAsAConfigError() throws Exception {
        ConfigException e = assertThrows(ConfigException.class, () -> start(dir.resolve("s1.json"), nested(CgroupTree.MAX_DEPTH + 1)));
        assertTrue(e.getMessage().contains(": Resource temporarily unavailable (EAGAIN): a group at depth " + (CgroupTree.MAX_DEPTH + 1)),
                   e.getMessage());

        Path config = dir.resolve("deep.json");
        Files.writeString(config, "{ " + nested(1000) + " }");
        e = assertThrows(ConfigException.class, () -> ConfigLoader.parse(config));
        assertTrue(e.getMessage().matches(java.util.regex.Pattern.quote(config + ": nested deeper than " + ConfigLoader.MAX_NESTING
                                                                         + " levels at line 1, column ") + "\\d+ \\(groups may be at most "
                                          + CgroupTree.MAX_DEPTH + " deep\\)"), e.getMessage());
    }

    /** {@code "cgroup": { "d": { "d": ... } } }}, {@code depth} groups deep. */
    private static String nested(int depth) {
        return "\"cgroup\": " + "{ \"d\": ".repeat(depth) + "{}" + " }".repeat(depth);
    }

    /** A state file that is not JSON (or nested too deep) stops the start with the file, the place, and what to do. */
    @Test
    void shouldNameTheFileAndThePlaceOfAStateFileThatCannotBeRead() throws Exception {
        Path state = dir.resolve("state.json");
        try (Server server = start(state, "")) {
            ok(client(server).post("mkdir", "kept", null, null));
        }
        try (Server server = start(state, "")) {
            ok(client(server).post("mkdir", "later", null, null));
        }
        start(state, "").close();                // snapshots "kept" and "later"; "kept" alone is the one before
        Files.writeString(state, "{ \"cgroup\": {\n  \"x\": ");
        ConfigException e = assertThrows(ConfigException.class, () -> start(state, ""));
        assertTrue(e.getMessage().startsWith("server.state = \"" + state + "\": not valid JSON: Unexpected end-of-input"), e.getMessage());
        assertTrue(e.getMessage().contains(" at line 2, column "), e.getMessage());
        assertTrue(e.getMessage().endsWith("(move state.json away to start from the config's trees; " + dir.resolve("state.json.prev")
                                           + " holds the state as the compaction before the last left it)"), e.getMessage());
        Files.writeString(state, "{ " + nested(1000) + " }");
        e = assertThrows(ConfigException.class, () -> start(state, ""));
        assertTrue(e.getMessage().startsWith("server.state = \"" + state + "\": nested deeper than " + ConfigLoader.MAX_NESTING + " levels at line 1"),
                   e.getMessage());

        Files.move(dir.resolve("state.json.prev"), state, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        try (Server server = start(state, "")) {
            assertEquals(List.of("kept/"), server.mounts().list("").stream().filter(n -> n.endsWith("/")).toList(), "the previous snapshot restores");
        }
    }

    /**
     * The state file in a directory others may write (as /tmp), created there first by another
     * user (nobody) with a config of their choosing, is refused; so is the file when it is theirs
     * or writable by them in a directory of ours.
     */
    @Test
    void shouldRefuseAStateFileAnotherUserCouldHaveWritten() throws Exception {
        Prerequisites.require("root".equals(System.getProperty("user.name")), "not root: it needs root to create files as nobody");
        Tools.require("setpriv", "/usr/bin/setpriv");
        Path shared = Files.createTempDirectory("iotarget-shared-");
        try {
            Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
            Path state = shared.resolve("state.json");
            List<String> asNobody = new ArrayList<>(CliProcess.AS_NOBODY);
            asNobody.addAll(List.of("sh", "-c", "echo '{ \"cgroup\": { \"theirs\": {} } }' > " + state));
            assertEquals(0, Tools.run(10, asNobody).exit());
            assertEquals("nobody", Files.getOwner(state).getName());

            ConfigException e = assertThrows(ConfigException.class, () -> start(state, ""));
            assertEquals("server.state = \"" + state + "\": its directory " + shared + " is writable by others (mode rwxrwxrwx), who could choose"
                         + " its contents; make the directory yours and writable by no one else (chown, chmod go-w), or set server.state in one that is",
                         e.getMessage());

            Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
            e = assertThrows(ConfigException.class, () -> start(state, ""));
            assertEquals("server.state = \"" + state + "\": the file " + state + " is owned by nobody (uid 65534), not by this server's uid 0,"
                         + " who could choose its contents; check its contents, then make it yours with mode 0600, or remove it", e.getMessage());

            Path link = Files.createSymbolicLink(shared.resolve("ours.json"), state);     // our link to their file
            e = assertThrows(ConfigException.class, () -> start(link, ""));
            assertTrue(e.getMessage().contains("the file " + link + " is owned by nobody (uid 65534)"), e.getMessage());
            Files.delete(link);

            Files.delete(state);
            Files.writeString(state, "{}");
            Files.setPosixFilePermissions(state, PosixFilePermissions.fromString("rw-rw-rw-"));
            e = assertThrows(ConfigException.class, () -> start(state, ""));
            assertTrue(e.getMessage().contains("the file " + state + " is writable by others (mode rw-rw-rw-)"), e.getMessage());

            Files.setPosixFilePermissions(state, PosixFilePermissions.fromString("rw-------"));
            try (Server server = start(state, "")) {
                assertTrue(server.summary().stream().anyMatch(l -> l.endsWith("(restored from it)")), server.summary().toString());
            }
        } finally {
            CliProcess.deleteTree(shared);
        }
    }
}
