package io.iotarget.frontend.nbd;

import io.iotarget.iocontrol.HostGroupName;
import io.iotarget.testkit.TestPki;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 29, hole 2: the identities that shared one per-host group each name their own — two
 * certificates whose CN is alice but whose subjects differ, PSK user alice; and a plaintext
 * client at 127.0.0.1, PSK user 127.0.0.1 and a certificate with CN 127.0.0.1.
 */
class ClientIdentityTest {
    private static final InetSocketAddress LOOPBACK = new InetSocketAddress("127.0.0.1", 40000);
    @TempDir
    static Path dir;

    private static X509Certificate certificate(TestPki pki, String name, String subject) throws Exception {
        try (InputStream in = Files.newInputStream(pki.client(name, subject).resolve(TestPki.CLIENT_CERT))) {
            return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
    }

    private static String groupName(X509Certificate certificate, String pskUsername) {
        ClientIdentity id = certificate != null ? new ClientIdentity(true, certificate, ClientIdentity.fingerprint(certificate), null)
                : pskUsername != null ? new ClientIdentity(true, null, null, pskUsername) : ClientIdentity.PLAINTEXT;
        return HostGroupName.of(id.hostIdentity(LOOPBACK));
    }

    @Test
    void identitiesThatSharedAGroupNowEachNameTheirOwn() throws Exception {
        TestPki pki = TestPki.create(dir.resolve("ca"), "identity CA");
        X509Certificate t1 = certificate(pki, "t1", "/O=t1/CN=alice");
        X509Certificate t2 = certificate(pki, "t2", "/O=t2/CN=alice");
        X509Certificate loopbackCn = certificate(pki, "lo", "/CN=127.0.0.1");
        List<String> alices = List.of(groupName(t1, null), groupName(t2, null), groupName(null, "alice"));
        assertEquals(List.of("cert:CN=alice,O=t1", "cert:CN=alice,O=t2", "psk:alice"), alices);
        List<String> loopbacks = List.of(groupName(null, null), groupName(null, "127.0.0.1"), groupName(loopbackCn, null));
        assertEquals(List.of("addr:127.0.0.1", "psk:127.0.0.1", "cert:CN=127.0.0.1"), loopbacks);
        Set<String> all = new HashSet<>(alices);
        all.addAll(loopbacks);
        assertEquals(6, all.size(), "no two share a group: " + all);
        assertTrue(all.stream().noneMatch(String::isEmpty));
    }
}
