package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.http.ControlClient;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.HostIdentity;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.testkit.Tools;
import io.iotarget.testkit.Prerequisites;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code server.state}'s journal at each step a crash can stop: a change is one line in the
 * journal, not a rewrite of the state; a compaction that started a new journal
 * ({@code .journal.next}) but had not yet replaced the snapshot, or had replaced it but not
 * yet renamed the new journal, restores every change once; a line a crash cut short is left
 * out; a line that no longer applies names the file and the line; a journal that cannot be
 * written costs a whole snapshot at the next change, and no change.
 */
class StateJournalTest {
    @TempDir
    Path dir;

    private Server start(Path state) throws Exception {
        return Server.start(new ObjectMapper().readTree("""
                { "server": { "control": "127.0.0.1:0", "state": "%s" } }""".formatted(state)), dir);
    }

    private static List<String> groups(Server server) throws Exception {
        return server.mounts().list("").stream().filter(n -> n.endsWith("/")).toList();
    }

    private static String header(Path snapshot) throws Exception {
        return "{\"snapshot\":\"" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(snapshot))) + "\"}\n";
    }

    /** The state as a server left it: a snapshot without "one", and a journal that makes it. */
    private Path oneInTheJournal(String name) throws Exception {
        Path state = Files.createDirectories(dir.resolve(name)).resolve("state.json");
        try (Server server = start(state)) {
            byte[] snapshot = Files.readAllBytes(state);
            ControlClient client = ControlClient.connect(ControlEndpoint.hostPort(server.controlAddress()), null, dir, null);
            assertTrue(client.post("mkdir", "one", null, null).ok());
            assertTrue(client.post("write", "cgroup.subtree_control", null, "+io").ok());
            assertEquals(new String(snapshot), Files.readString(state), "a change does not rewrite the snapshot");
            assertEquals(header(state) + "[\"mkdir\",\"one\"]\n[\"write\",\"cgroup.subtree_control\",\"+io\"]\n",
                         Files.readString(journal(state)));
        }
        return state;
    }

    private static Path journal(Path state) {
        return state.resolveSibling("state.json.journal");
    }

    private static Path next(Path state) {
        return state.resolveSibling("state.json.journal.next");
    }

    @Test
    void shouldRestoreEveryChangeOnceWhereverACompactionStopped() throws Exception {
        Path state = oneInTheJournal("before");
        // The snapshot the compaction would write: what a restart writes from the same files.
        Path copy = Files.createDirectories(dir.resolve("compacted")).resolve("state.json");
        Files.copy(state, copy);
        Files.copy(journal(state), journal(copy));
        try (Server server = start(copy)) {
            assertEquals(List.of("one/"), groups(server));
        }
        String newJournal = header(copy) + "[\"mkdir\",\"two\"]\n";

        // Stopped before the snapshot was replaced: the old snapshot, its journal, then the new journal.
        Files.writeString(next(state), newJournal);
        try (Server server = start(state)) {
            assertEquals(List.of("one/", "two/"), groups(server));
        }

        // Stopped after the snapshot was replaced, before the rename: the old journal no longer applies.
        Path after = oneInTheJournal("after");
        Files.copy(copy, after, StandardCopyOption.REPLACE_EXISTING);
        Files.writeString(next(after), newJournal);
        try (Server server = start(after)) {
            assertEquals(List.of("one/", "two/"), groups(server), "\"one\" is in the snapshot, and not made twice");
        }
        assertTrue(Files.notExists(next(after)), "the start wrote one snapshot and an empty journal");
        assertEquals(header(after), Files.readString(journal(after)));
    }

    /**
     * A host's group made by a connect (cgroup_per_host) is not saved until a request uses it;
     * that request then writes a whole snapshot, so what is written to that group comes back
     * after a restart rather than failing on a group the journal never made.
     */
    @Test
    void shouldSnapshotAHostsGroupBeforeAChangeToItIsKept() throws Exception {
        Path state = Files.createDirectories(dir.resolve("host")).resolve("state.json");
        String host = "nqn.2014-08.org.nvmexpress:uuid:12345678-0000-0000-0000-000000000000";
        try (Server server = start(state)) {
            ControlClient client = ControlClient.connect(ControlEndpoint.hostPort(server.controlAddress()), null, dir, null);
            assertTrue(client.post("mkdir", "tenant", null, null).ok());
            Group tenant = server.engine().controller().group("tenant");
            server.engine().releaseHostGroup(server.engine().bindHostGroup(tenant, HostIdentity.nqn(host)));   // a host came and went
            server.engine().releaseHostGroup(server.engine().bindHostGroup(tenant, HostIdentity.nqn("another")));
            assertTrue(client.post("write", "tenant/nqn:" + host + "/cgroup.max.descendants", null, "5").ok());
            assertTrue(Files.readString(state).contains(host), "the change to the host's group wrote a whole snapshot");
            assertFalse(Files.readString(state).contains("another"), "a host's group nobody used is not saved: a reconnect makes it again");
        }
        try (Server server = start(state)) {
            assertEquals("5\n", server.mounts().read("tenant/nqn:" + host + "/cgroup.max.descendants"));
        }
    }

    /**
     * Issue 29, hole 1: a host whose identity is empty (an NQN that began with NUL, which
     * Connect now refuses, or any other kind) has a group a path names, so saving the tree and
     * restoring it work, and so does its rmdir.
     */
    @Test
    void shouldSaveAndRestoreTheGroupOfAHostWithAnEmptyIdentity() throws Exception {
        Path state = Files.createDirectories(dir.resolve("empty-host")).resolve("state.json");
        try (Server server = start(state)) {
            ControlClient client = ControlClient.connect(ControlEndpoint.hostPort(server.controlAddress()), null, dir, null);
            assertTrue(client.post("mkdir", "tenant", null, null).ok());
            Group tenant = server.engine().controller().group("tenant");
            server.engine().releaseHostGroup(server.engine().bindHostGroup(tenant, HostIdentity.of(HostIdentity.Kind.NQN, new byte[0])));
            assertTrue(client.post("write", "tenant/nqn:/cgroup.max.descendants", null, "3").ok());
            ControlClient.Reply saved = client.get("save", null);
            assertTrue(saved.ok(), "save answers: " + saved);
            assertTrue(Files.readString(state).contains("nqn:"));
        }
        try (Server server = start(state)) {
            assertEquals("3\n", server.mounts().read("tenant/nqn:/cgroup.max.descendants"));
            server.mounts().rmdir("tenant/nqn:");
            assertEquals(List.of(), server.mounts().list("tenant").stream().filter(n -> n.endsWith("/")).toList(), "the host's group went, not tenant");
        }
    }

    /**
     * A journal that cannot be written (made immutable, as a full disk would refuse it): the
     * change stays made and the client gets EIO; the next change writes a whole snapshot, and a
     * restart has both.
     */
    @Test
    void shouldSaveAWholeSnapshotAfterTheJournalCouldNotBeWritten() throws Exception {
        Prerequisites.require("root".equals(System.getProperty("user.name")), "not root: it needs root to make a file immutable");
        Tools.require("chattr", "/usr/bin/chattr");
        Path state = Files.createDirectories(dir.resolve("full")).resolve("state.json");
        try (Server server = start(state)) {
            ControlClient client = ControlClient.connect(ControlEndpoint.hostPort(server.controlAddress()), null, dir, null);
            assertTrue(client.post("mkdir", "one", null, null).ok());
            assertEquals(0, Tools.run(10, List.of("chattr", "+i", journal(state).toString())).exit());
            ControlClient.Reply refused;
            try {
                refused = client.post("mkdir", "two", null, null);
            } finally {
                assertEquals(0, Tools.run(10, List.of("chattr", "-i", journal(state).toString())).exit());
            }
            assertEquals("EIO", refused.errno(), refused.body());
            assertTrue(refused.body().contains("applied, but the state file " + state + " could not be written: "), refused.body());
            assertTrue(refused.body().endsWith("(the next change saves the whole state)\n"), refused.body());
            assertEquals(List.of("one/", "two/"), groups(server), "the change stays made");
            assertTrue(client.post("mkdir", "three", null, null).ok());
            assertTrue(Files.readString(state).contains("\"two\""), "the next change wrote a whole snapshot");
        }
        try (Server server = start(state)) {
            assertEquals(List.of("one/", "three/", "two/"), groups(server));
        }
    }

    @Test
    void shouldLeaveOutALineACrashCutShort() throws Exception {
        Path state = oneInTheJournal("cut");
        Files.writeString(journal(state), "[\"mkdir\",\"tw", java.nio.file.StandardOpenOption.APPEND);
        try (Server server = start(state)) {
            assertEquals(List.of("one/"), groups(server));
        }
    }

    @Test
    void shouldNameTheLineOfAChangeThatNoLongerApplies() throws Exception {
        Path state = oneInTheJournal("stale");
        Files.writeString(journal(state), "[\"rmdir\",\"nothere\"]\n", java.nio.file.StandardOpenOption.APPEND);
        ConfigException e = assertThrows(ConfigException.class, () -> start(state));
        assertTrue(e.getMessage().startsWith("server.state = \"" + state + "\": " + journal(state) + " line 4: rmdir nothere: "), e.getMessage());
        assertTrue(e.getMessage().endsWith("; move state.json away to start from the config's trees"), e.getMessage());
    }
}
