package io.iotarget.cluster;

import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.TestPki;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The etcd client's URI, TLS and authentication against real etcd members. */
class EtcdClientTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(2);

    @TempDir
    Path dir;

    private static void roundTrip(EtcdClient client) throws IOException {
        client.put("/iotarget/test/k", "v".getBytes(StandardCharsets.UTF_8), 0);
        EtcdClient.Range r = client.range("/iotarget/test/");
        assertEquals(1, r.kvs().size());
        assertArrayEquals("v".getBytes(StandardCharsets.UTF_8), r.kvs().getFirst().value());
    }

    @Test
    void shouldNameWhatIsWrongWithAnEtcdUri() {
        assertNull(EtcdClient.problem("etcd://10.0.0.1:2379,10.0.0.2:2379"));
        assertNull(EtcdClient.problem("etcd://[::1]:2379"));
        assertEquals("another scheme", EtcdClient.problem("http://h:1"));
        assertEquals("no endpoint", EtcdClient.problem("etcd://"));
        assertEquals("'h' is not HOST:PORT", EtcdClient.problem("etcd://h"));
        assertEquals("'h:99999' has no port 1-65535", EtcdClient.problem("etcd://h:99999"));
        assertEquals("'h:1/x' has no port 1-65535", EtcdClient.problem("etcd://h:1/x"));
    }

    @Test
    void prefixEndIsThePrefixWithItsLastByteIncreased() {
        assertArrayEquals("/a0".getBytes(StandardCharsets.UTF_8), EtcdClient.prefixEnd("/a/".getBytes(StandardCharsets.UTF_8)));
        assertArrayEquals(new byte[] {'a' + 1}, EtcdClient.prefixEnd(new byte[] {'a', (byte) 0xff}));
    }

    @Test
    void compareAndSwapWritesOnlyWhenEveryKeyIsAtItsRevisionAndSeesADeletedKey() throws Exception {
        try (EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd"), 1);
             EtcdClient client = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, TIMEOUT)) {
            byte[] one = "1".getBytes(StandardCharsets.UTF_8), two = "2".getBytes(StandardCharsets.UTF_8);
            String a = "/iotarget/cas/a", b = "/iotarget/cas/b";
            long created = client.txn(List.of(EtcdClient.Compare.unchanged(a, 0), EtcdClient.Compare.unchanged(b, 0)),
                                                 List.of(new EtcdClient.Put(a, one, 0), new EtcdClient.Put(b, one, 0)), List.of());
            assertTrue(created > 0, "absent keys are at revision 0");
            assertEquals(-1, client.txn(List.of(EtcdClient.Compare.unchanged(a, 0)), List.of(new EtcdClient.Put(a, two, 0)), List.of()),
                         "a exists now");
            long changed = client.txn(List.of(EtcdClient.Compare.unchanged(a, created), EtcdClient.Compare.unchanged(b, created)),
                                                 List.of(new EtcdClient.Put(a, two, 0)), List.of(b));
            assertTrue(changed > created);
            EtcdClient.Range r = client.range("/iotarget/cas/");
            assertEquals(1, r.kvs().size(), "b deleted");
            assertArrayEquals(two, r.kvs().getFirst().value());
            assertEquals(changed, r.kvs().getFirst().modRevision());
            assertEquals(-1, client.txn(List.of(EtcdClient.Compare.unchanged(b, created)), List.of(new EtcdClient.Put(b, two, 0)), List.of()),
                         "a deleted key is no longer at its old revision");
        }
    }

    @Test
    void shouldSpeakTlsWithAClientCertificateAndBeRefusedWithout() throws Exception {
        TestPki pki = TestPki.create(dir.resolve("pki"), "etcd-ca");
        Path server = pki.serverAndClient("etcd");
        Path node = pki.client("node", "/CN=node");
        try (EtcdCluster etcd = EtcdCluster.startTls(dir.resolve("etcd"), 1, server)) {
            assertTrue(etcd.endpoints().getFirst().startsWith("https://"));
            EtcdClient.Access access = new EtcdClient.Access(node.resolve(TestPki.CA_CERT), node.resolve(TestPki.CLIENT_CERT),
                                                             node.resolve(TestPki.CLIENT_KEY), null, null);
            try (EtcdClient client = EtcdClient.create(etcd.uri(), access, TIMEOUT)) {
                roundTrip(client);
            }
            EtcdClient.Access anonymous = new EtcdClient.Access(node.resolve(TestPki.CA_CERT), null, null, null, null);
            try (EtcdClient client = EtcdClient.create(etcd.uri(), anonymous, TIMEOUT)) {
                assertThrows(IOException.class, () -> client.range("/iotarget/"), "etcd requires a client certificate");
            }
            try (EtcdClient client = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, TIMEOUT)) {
                assertThrows(IOException.class, () -> client.range("/iotarget/"), "plain HTTP to a TLS member");
            }
        }
    }

    @Test
    void shouldAuthenticateWithTheUsersPasswordFromAFile() throws Exception {
        Tools.require("etcdctl", "/usr/bin/etcdctl");
        try (EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd"), 1)) {
            String endpoint = "--endpoints=" + etcd.endpoints().getFirst();
            Tools.ok(30, "/usr/bin/etcdctl", endpoint, "user", "add", "root", "--new-user-password=s3cret");
            Tools.ok(30, "/usr/bin/etcdctl", endpoint, "auth", "enable");
            Path password = Files.writeString(dir.resolve("password"), "s3cret\n");
            try (EtcdClient client = EtcdClient.create(etcd.uri(), new EtcdClient.Access(null, null, null, "root", password), TIMEOUT)) {
                roundTrip(client);
                assertTrue(client.grant(5).id() != 0, "leases too");
            }
            try (EtcdClient client = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, TIMEOUT)) {
                assertThrows(IOException.class, () -> client.range("/iotarget/"), "no user: refused");
            }
            Path wrong = Files.writeString(dir.resolve("wrong"), "guess\n");
            try (EtcdClient client = EtcdClient.create(etcd.uri(), new EtcdClient.Access(null, null, null, "root", wrong), TIMEOUT)) {
                assertThrows(IOException.class, () -> client.range("/iotarget/"), "a wrong password: refused");
            }
        }
    }
}
