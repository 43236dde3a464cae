package io.iotarget.control.config;

import com.code_intelligence.jazzer.junit.DictionaryEntries;
import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.SilentCloseable;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.tree.BackendTree;
import io.iotarget.control.tree.CgroupTree;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nbd.NbdServer;
import io.iotarget.frontend.nvmetcp.NvmeTarget;
import io.iotarget.model.Clock;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.transport.Transport;
import org.junit.jupiter.api.AfterAll;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * Coverage-guided fuzz target for the config loader: any bytes as a config file, replayed onto
 * real trees (group tree, backends, NBD exports, nvmet). Whatever it finds — bad JSON, wrong
 * kinds, unknown sections or attributes, values the trees refuse — the loader throws nothing
 * but a {@link ConfigException} with a message. Fuzzed configs are kept off the machine: a
 * backend path and any nvmet address other than 127.0.0.1 port 0 are refused by the trees here
 * (as an EACCES the loader must report like any other refusal), so no file is created and no
 * port opened beyond loopback.
 */
class ConfigLoaderFuzzTest {
    private static Transport transport;

    private static synchronized Transport transport() throws IOException {
        if (transport == null) transport = new Transport(new Transport.Settings(1, java.time.Duration.ofSeconds(30), 100, 100, Transport.Settings.DEFAULT_SEND_BUFFER, java.time.Duration.ZERO));
        return transport;
    }

    @AfterAll
    static void stop() {
        if (transport != null) transport.close();
        transport = null;
    }

    @FuzzTest
    @SuppressWarnings("try")      // the detector's scope is the try block
    @DictionaryEntries({"\"backends\"", "\"cgroup\"", "\"nbd\"", "\"nvmet\"", "\"server\"", "\"exports\"", "\"subsystems\"",
            "\"namespaces\"", "\"ports\"", "\"hosts\"", "\"allowed_hosts\"", "\"type\"", "\"memory\"", "\"null\"", "\"file\"",
            "\"size\"", "\"enable\"", "\"backend\"", "\"io.max\"", "\"io.weight\"", "\"io.cost.qos\"", "\"cgroup.subtree_control\"",
            "\"+io\"", "\"device_path\"", "\"addr_trtype\"", "\"tcp\"", "\"addr_adrfam\"", "\"ipv4\"", "\"addr_traddr\"",
            "\"127.0.0.1\"", "\"addr_trsvcid\"", "\"attr_allow_any_host\"", "\"dhchap_key\"", "\"1G\"", "\"259:0 riops=100\""})
    void theLoaderThrowsNothingButConfigException(byte[] input) throws Exception {
        // Loopback only: the SSRF detector would report the test's own connections to its server.
        try (SilentCloseable loopback = BugDetectors.allowNetworkConnections((host, port) -> host.contains("127.0.0.1") || host.equals("localhost"))) {
            Engine engine = new Engine(Clock.SYSTEM, false);
            NbdServer nbd = new NbdServer(engine, transport());
            NvmeTarget nvme = new NvmeTarget(engine, transport());
            try {
                var config = ConfigLoader.parse(new ByteArrayInputStream(input), "fuzz.json");
                ConfigLoader.serverSettings(config);
                ConfigTree cgroup = new CgroupTree(engine.controller());
                ConfigTree backends = new Guarded(new BackendTree(engine));
                ConfigTree nvmet = new Guarded(nvme.tree());
                ConfigLoader.apply(config, section -> switch (section) {
                    case "cgroup" -> cgroup;
                    case "backends" -> backends;
                    case "nbd" -> nbd.tree();
                    case "nvmet" -> nvmet;
                    default -> null;
                });
            } catch (ConfigException e) {
                assertFalse(e.getMessage() == null || e.getMessage().isBlank(), "a config error says what is wrong");
            } finally {
                nbd.close();
                nvme.close();
                engine.close();
            }
        }
    }

    /** A tree that refuses what would reach outside the test: backend paths, non-loopback or fixed ports. */
    private record Guarded(ConfigTree tree) implements ConfigTree {
        private static final List<String> OUTSIDE = List.of("path", "device_path", "addr_traddr", "addr_trsvcid");

        @Override
        public void write(String path, String value) throws ControlException {
            String attribute = path.substring(path.lastIndexOf('/') + 1);
            boolean safe = switch (attribute) {
                case "addr_traddr" -> value.strip().equals("127.0.0.1");
                case "addr_trsvcid" -> value.strip().equals("0");
                case "path" -> false;
                case "device_path" -> !value.strip().startsWith("/");
                default -> true;
            };
            if (OUTSIDE.contains(attribute) && !safe) throw new ControlException(Errno.EACCES, path + ": not in this test");
            tree.write(path, value);
        }

        @Override
        public Kind kind(String path) throws ControlException {
            return tree.kind(path);
        }

        @Override
        public List<String> list(String path) throws ControlException {
            return tree.list(path);
        }

        @Override
        public String read(String path) throws ControlException {
            return tree.read(path);
        }

        @Override
        public List<String> replay(String path) throws ControlException {
            return tree.replay(path);
        }

        @Override
        public void mkdir(String path) throws ControlException {
            tree.mkdir(path);
        }

        @Override
        public void rmdir(String path) throws ControlException {
            tree.rmdir(path);
        }

        @Override
        public void link(String target, String linkPath) throws ControlException {
            tree.link(target, linkPath);
        }

        @Override
        public void unlink(String linkPath) throws ControlException {
            tree.unlink(linkPath);
        }

        @Override
        public String readLink(String linkPath) throws ControlException {
            return tree.readLink(linkPath);
        }
    }
}
