package io.iotarget.control.config;

import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nvmetcp.NvmeTarget;
import io.iotarget.model.ConfigTree;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ConfigLoaderTest {
    @TempDir
    Path dir;

    /** Two objects back to back (a merge gone wrong): the second must not be dropped in silence. */
    @Test
    void shouldRefuseAnythingAfterTheTopLevelObject() throws Exception {
        Path file = dir.resolve("config.json");
        Files.writeString(file, """
                { "backends": { "a": { "type": "null", "size": "1G", "enable": 1 } } }
                { "cgroup": { "tenants": {} } }
                """);
        ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.parse(file));
        assertTrue(e.getMessage().startsWith(file + ": not valid JSON: "), e.getMessage());
    }

    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
    private static final String KEY = "DHHC-1:01:FZutw06N2trA/TvbhG4i6jXua32pSJce08/ZmPlk0jMEPvkB:";

    private static void applyNvmet(ConfigTree tree, String nvmet) throws ConfigException {
        String json = "{ \"nvmet\": " + nvmet + " }";
        ConfigLoader.apply(ConfigLoader.parse(new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)), "test.json"),
                section -> section.equals("nvmet") ? tree : null);
    }

    @Test
    void shouldConfigureHostKeysFromAFile() throws Exception {
        try (Engine engine = new Engine(); NvmeTarget target = new NvmeTarget(engine)) {
            applyNvmet(target.tree(), """
                    { "hosts": { "%s": { "dhchap_key": "%s", "dhchap_ctrl_key": "%s",
                                          "dhchap_hash": "hmac(sha384)", "dhchap_dhgroup": "ffdhe3072" } },
                      "subsystems": { "nqn.2026-11.io.iotarget:a": { "allowed_hosts": ["%s"] } } }
                    """.formatted(HOST, KEY, KEY, HOST));
            String h = "hosts/" + HOST + "/";
            assertEquals(KEY + "\n", target.tree().read(h + "dhchap_key"));
            assertEquals(KEY + "\n", target.tree().read(h + "dhchap_ctrl_key"));
            assertEquals("hmac(sha384)\n", target.tree().read(h + "dhchap_hash"));
            assertEquals("ffdhe3072\n", target.tree().read(h + "dhchap_dhgroup"));
        }
    }

    @Test
    void shouldNameABadKeyWithoutShowingIt() throws Exception {
        String mistyped = KEY.replace("FZutw", "FZutW");
        try (Engine engine = new Engine(); NvmeTarget target = new NvmeTarget(engine)) {
            ConfigException e = assertThrows(ConfigException.class,
                    () -> applyNvmet(target.tree(), "{ \"hosts\": { \"" + HOST + "\": { \"dhchap_key\": \"" + mistyped + "\" } } }"));
            assertTrue(e.getMessage().startsWith("nvmet.hosts." + HOST + ".dhchap_key = \"(secret)\": "), e.getMessage());
            assertTrue(e.getMessage().contains("CRC-32 does not match"), e.getMessage());
            assertFalse(e.getMessage().contains("FZut"), e.getMessage());
        }
    }

    private static io.iotarget.transport.Transport.Settings transport(String server) throws ConfigException {
        String json = "{ \"server\": { " + server + " } }";
        return ConfigLoader.serverSettings(ConfigLoader.parse(new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)), "test.json"))
                .transport();
    }

    private static int sendBuffer(String server) throws ConfigException {
        return transport(server).sendBufferBytes();
    }

    @Test
    void shouldReadThePollTimeInMicrosecondsAndNotPollByDefault() throws Exception {
        assertEquals(java.time.Duration.ZERO, transport("\"event_loops\": 1").poll());
        assertEquals(java.time.Duration.ofMillis(1), transport("\"poll_us\": 1000").poll());
        assertEquals(java.time.Duration.ofNanos(50_000), transport("\"poll_us\": 50").poll());
    }

    @Test
    void shouldReadTheSendBufferAsASizeWithZeroForTheKernelsAutoTuning() throws Exception {
        assertEquals(512 * 1024, sendBuffer("\"event_loops\": 1"));
        assertEquals(256 * 1024, sendBuffer("\"send_buffer\": \"256K\""));
        assertEquals(65536, sendBuffer("\"send_buffer\": 65536"));
        assertEquals(0, sendBuffer("\"send_buffer\": 0"));
    }
}
