package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.cluster.ClusterSettings;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.cluster.EtcdShareStore;
import io.iotarget.control.config.ConfigLoader;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.http.ControlClient;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.EtcdCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The cluster section: each mistake names its key; save keeps the section and io.max.global. */
class ClusterConfigTest {
    private final ObjectMapper json = new ObjectMapper();
    @TempDir
    Path dir;

    private String refusal(String cluster) {
        String config = "{ \"server\": { \"control\": \"127.0.0.1:0\" }, \"cluster\": " + cluster + " }";
        return assertThrows(ConfigException.class, () -> Server.start(json.readTree(config), dir)).getMessage();
    }

    @Test
    void shouldNameTheKeyOfEveryMistake() {
        String ok = "\"node\": \"a\", \"store\": \"etcd://127.0.0.1:2379\", \"nodes\": 3";
        assertEquals("cluster.node: missing (this node's id, different on every node)", refusal("{ \"store\": \"etcd://h:1\", \"nodes\": 3 }"));
        assertEquals("cluster.node = \"a b\": expected 1 to 64 letters, digits or ._:@+- as a string",
                     refusal("{ \"node\": \"a b\", \"store\": \"etcd://h:1\", \"nodes\": 3 }"));
        assertEquals("cluster.store = \"http://h:1\": expected etcd://HOST:PORT[,HOST:PORT...]: another scheme",
                     refusal("{ \"node\": \"a\", \"store\": \"http://h:1\", \"nodes\": 3 }"));
        assertEquals("cluster.nodes: missing (how many nodes share the io.max.global limits)",
                     refusal("{ \"node\": \"a\", \"store\": \"etcd://h:1\" }"));
        assertEquals("cluster.nodes = 0: expected an integer from 1 to 1000 (nodes that share the limits)",
                     refusal("{ \"node\": \"a\", \"store\": \"etcd://h:1\", \"nodes\": 0 }"));
        assertEquals("cluster.interval_ms = \"200\": expected an integer from 10 to 60000 (milliseconds between exchanges)",
                     refusal("{ " + ok + ", \"interval_ms\": \"200\" }"));
        assertEquals("cluster.lease_ms = 300: expected an integer from 400 to 3600000 (milliseconds a share holds without the store; "
                     + "at least two intervals, 2 x cluster.interval_ms)", refusal("{ " + ok + ", \"lease_ms\": 300 }"));
        assertEquals("cluster.leases: unknown setting (expected: node, group, store, nodes, interval_ms, lease_ms, store_ca, store_cert, store_key, "
                     + "store_user, store_password_file)",
                     refusal("{ " + ok + ", \"leases\": 1 }"));
        assertEquals("cluster: expected an object", refusal("[]"));
    }

    @Test
    void shouldLeaveNodesToTheGatewayGroupWhenTheConfigNamesOne() throws Exception {
        ClusterSettings s = ConfigLoader.clusterSettings(json.readTree("{ \"cluster\": { \"node\": \"a\", \"store\": \"etcd://h:1\", \"group\": \"ha\" } }"));
        assertEquals(0, s.nodes(), "no cluster.nodes: the group's live members count");
        assertEquals("ha", s.group());
        assertEquals("cluster.group = \"a b\": expected 1 to 64 letters, digits or ._:@+- as a string",
                     refusal("{ \"node\": \"a\", \"store\": \"etcd://h:1\", \"group\": \"a b\" }"));
    }

    @Test
    void shouldRefuseARedisStoreAndNameEtcdInstead() {
        assertEquals("cluster.store = \"redis://127.0.0.1:6379\": Redis is no longer supported; use etcd://HOST:PORT[,HOST:PORT...] (docs/cluster.md)",
                     refusal("{ \"node\": \"a\", \"store\": \"redis://127.0.0.1:6379\", \"nodes\": 3 }"));
        assertEquals("cluster.store = \"rediss://h:6380\": Redis is no longer supported; use etcd://HOST:PORT[,HOST:PORT...] (docs/cluster.md)",
                     refusal("{ \"node\": \"a\", \"store\": \"rediss://h:6380\", \"nodes\": 3 }"));
    }

    @Test
    void shouldNameTheKeyOfEveryEtcdMistake() throws Exception {
        String etcd = "\"node\": \"a\", \"nodes\": 3, \"store\": ";
        assertEquals("cluster.store = \"etcd://h\": expected etcd://HOST:PORT[,HOST:PORT...]: 'h' is not HOST:PORT", refusal("{ " + etcd + "\"etcd://h\" }"));
        assertEquals("cluster.store = \"etcd://h:1,\": expected etcd://HOST:PORT[,HOST:PORT...]: '' is not HOST:PORT", refusal("{ " + etcd + "\"etcd://h:1,\" }"));
        Path ca = Files.writeString(dir.resolve("ca.pem"), "x");
        assertEquals("cluster.store_ca = \"/nonexistent/ca.pem\": not a readable file",
                     refusal("{ " + etcd + "\"etcd://h:1\", \"store_ca\": \"/nonexistent/ca.pem\" }"));
        assertEquals("cluster.store_cert and cluster.store_key: give both (a client certificate and its key) or neither",
                     refusal("{ " + etcd + "\"etcd://h:1\", \"store_ca\": \"" + ca + "\", \"store_cert\": \"" + ca + "\" }"));
        assertEquals("cluster.store_user and cluster.store_password_file: give both or neither",
                     refusal("{ " + etcd + "\"etcd://h:1\", \"store_user\": \"root\" }"));
        ClusterSettings s = ConfigLoader.clusterSettings(json.readTree("{ \"cluster\": { " + etcd + "\"etcd://h:1,h:2\", \"store_ca\": \"" + ca
                                                                       + "\", \"store_user\": \"u\", \"store_password_file\": \"" + ca + "\" } }"));
        assertEquals(new EtcdClient.Access(ca, null, null, "u", ca), s.access());
    }

    @Test
    void shouldServeWithAnEtcdStoreAndSaveItsSection() throws Exception {
        try (EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd"))) {
            String config = """
                    { "server": { "control": "127.0.0.1:0" },
                      "cluster": { "node": "n1", "store": "%s", "nodes": 3, "interval_ms": 100, "lease_ms": 1000 },
                      "backends": { "disk": { "type": "null", "size": "64M", "enable": 1 } },
                      "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "a": { "io.max.global": "disk riops=9000" } } } }
                    """.formatted(etcd.uri());
            try (Server server = Server.start(json.readTree(config), dir)) {
                assertTrue(server.summary().stream().anyMatch(l -> l.startsWith("cluster node n1 of 3, store " + etcd.uri())), server.summary().toString());
                assertEquals(json.readTree(config).get("cluster"), json.readTree(save(server)).get("cluster"));
                // Alone and idle, the node's demand is its floor's: the store answers, and the share moves off the start (limit / 60).
                try (EtcdClient observer = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofSeconds(2))) {
                    Await.until(Duration.ofSeconds(10), () -> {
                        try {
                            return observer.range(EtcdShareStore.PREFIX).kvs().stream().anyMatch(kv -> kv.key().endsWith("/n1"));
                        } catch (java.io.IOException e) {
                            throw new AssertionError(e);
                        }
                    }, () -> "node n1 never wrote its share to etcd");
                }
            }
        }
    }

    @Test
    void shouldSaveTheSectionAndIoMaxGlobalAndComeBackTheSame() throws Exception {
        try (EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd"))) {
            String config = """
                    { "server": { "control": "127.0.0.1:0" },
                      "cluster": { "node": "n1", "store": "%s", "nodes": 3, "interval_ms": 100, "lease_ms": 1000 },
                      "backends": { "disk": { "type": "null", "size": "64M", "enable": 1 } },
                      "cgroup": { "tenants": { "cgroup.subtree_control": "+io",
                                               "a": { "io.max": "disk wiops=500", "io.max.global": "disk riops=9000 wbps=1048576" } } } }
                    """.formatted(etcd.uri());
            String saved;
            try (Server server = Server.start(json.readTree(config), dir)) {
                saved = save(server);
                assertEquals("disk rbps=max wbps=1048576 riops=9000 wiops=max\n", server.mounts().read("tenants/a/io.max.global"));
                assertTrue(server.mounts().read("tenants/a/io.max").matches("259:\\d+ rbps=max wbps=max riops=max wiops=500\n"),
                           "io.max as written: " + server.mounts().read("tenants/a/io.max"));
            }
            JsonNode tree = json.readTree(saved);
            assertEquals(json.readTree(config).get("cluster"), tree.get("cluster"));
            assertEquals("disk rbps=max wbps=1048576 riops=9000 wiops=max", tree.at("/cgroup/tenants/a/io.max.global").textValue());
            try (Server server = Server.start(tree, dir)) {
                assertEquals(saved, save(server));
                assertTrue(server.summary().stream().anyMatch(l -> l.startsWith("cluster node n1 of 3, store " + etcd.uri())), server.summary().toString());
            }
        }
    }

    private String save(Server server) throws Exception {
        ControlClient.Reply reply = ControlClient.connect(ControlEndpoint.hostPort(server.controlAddress()), null, dir, null).get("save", null);
        assertTrue(reply.ok(), reply.body());
        return reply.body();
    }
}
