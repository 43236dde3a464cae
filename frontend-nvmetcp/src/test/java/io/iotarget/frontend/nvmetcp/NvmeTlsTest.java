package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.auth.TestChapHost;
import io.iotarget.frontend.nvmetcp.auth.TlsKey;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.pdu.HostPdus;
import io.iotarget.frontend.nvmetcp.pdu.Pdu;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Base64;
import java.util.HexFormat;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NVMe/TCP over TLS 1.3 with pre-shared keys ({@code addr_tsas tls1.3}, {@code hosts/NQN/tls_key}):
 * OpenSSL's TLS 1.3 PSK client and the test host, with identities and keys derived as libnvme
 * derives them ({@link TlsKey}, checked against libnvme's vectors in TlsKeyTest).
 */
class NvmeTlsTest {
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000aa";
    private static final String OTHER_HOST = TestHost.HOST_NQN;
    private static final String DISCOVERY = "nqn.2014-08.org.nvmexpress.discovery";

    private TargetFixture f;
    private int tlsPort;

    @BeforeEach
    void setUp() throws Exception {
        f = new TargetFixture();
        f.tree.mkdir("hosts/" + HOST);
        f.tree.mkdir("ports/2");
        f.tree.write("ports/2/addr_trtype", "tcp");
        f.tree.write("ports/2/addr_adrfam", "ipv4");
        f.tree.write("ports/2/addr_traddr", "127.0.0.1");
        f.tree.write("ports/2/addr_tsas", "tls1.3");
    }

    @AfterEach
    void tearDown() {
        f.close();
    }

    /** A random key of {@code bytes} (32 or 48) in interchange format, as nvme gen-tls-key prints it. */
    static String newKey(int bytes) {
        byte[] key = new byte[bytes];
        new SecureRandom().nextBytes(key);
        CRC32 crc = new CRC32();
        crc.update(key);
        ByteBuffer b = ByteBuffer.allocate(bytes + 4).order(ByteOrder.LITTLE_ENDIAN).put(key).putInt((int) crc.getValue());
        return "NVMeTLSkey-1:" + (bytes == 48 ? "02" : "01") + ":" + Base64.getEncoder().encodeToString(b.array()) + ":";
    }

    private String configureKey(int bytes) throws ControlException {
        String key = newKey(bytes);
        f.tree.write("hosts/" + HOST + "/tls_key", key);
        return key;
    }

    private void listen(String treq) throws ControlException {
        f.tree.write("ports/2/addr_treq", treq);
        tlsPort = TargetFixture.listen(f.tree, "subsystems/" + TargetFixture.NQN, "ports/2", TargetFixture.NQN);
    }

    private TlsPskClient client(String interchange, int version, String hostNqn, String subNqn) {
        TlsKey key = TlsKey.parse(interchange);
        String identity = key.identity(version, hostNqn, subNqn);
        return new TlsPskClient(identity, key.tlsPsk(identity, hostNqn), key.sha384());
    }

    private static void assertErrno(Errno errno, org.junit.jupiter.api.function.Executable op) {
        ControlException e = assertThrows(ControlException.class, op);
        assertEquals(errno, e.errno(), e.getMessage());
    }

    @Test
    void portAndHostAttributesAreNvmets() throws Exception {
        f.tree.mkdir("ports/3");
        assertEquals("reserved\n", f.tree.read("ports/3/addr_tsas"), "before addr_trtype");
        f.tree.write("ports/3/addr_trtype", "tcp");
        assertEquals("none\n", f.tree.read("ports/3/addr_tsas"));
        assertErrno(Errno.EINVAL, () -> f.tree.write("ports/3/addr_treq", "required"));
        f.tree.write("ports/3/addr_tsas", "tls1.3");
        assertEquals("required\n", f.tree.read("ports/3/addr_treq"), "tls1.3 makes 'not specified' required");
        assertErrno(Errno.EINVAL, () -> f.tree.write("ports/3/addr_treq", "not specified"));
        f.tree.write("ports/3/addr_treq", "not required");
        assertEquals("not required\n", f.tree.read("ports/3/addr_treq"));
        f.tree.write("ports/3/addr_tsas", "none");
        assertEquals("not specified\n", f.tree.read("ports/3/addr_treq"), "none resets the secure channel");
        assertErrno(Errno.EINVAL, () -> f.tree.write("ports/3/addr_tsas", "tls1.2"));

        String key = configureKey(48);
        assertEquals(key + "\n", f.tree.read("hosts/" + HOST + "/tls_key"));
        String wrongCrc = key.substring(0, 20) + (key.charAt(20) == 'A' ? 'B' : 'A') + key.substring(21);
        ControlException e = assertThrows(ControlException.class, () -> f.tree.write("hosts/" + HOST + "/tls_key", wrongCrc));
        assertEquals(Errno.EINVAL, e.errno());
        assertTrue(!e.getMessage().contains(key.substring(16, 60)), "the error does not quote the key: " + e.getMessage());
        assertEquals(key + "\n", f.tree.read("hosts/" + HOST + "/tls_key"), "a refused key changes nothing");
        f.tree.write("hosts/" + HOST + "/tls_key", "");
        assertEquals("\n", f.tree.read("hosts/" + HOST + "/tls_key"));
    }

    /**
     * OpenSSL's client with the identity and TLS PSK a Linux host derives: ICReq inside TLS gets
     * ICResp. Version 1 offers OpenSSL's default suites, TLS_AES_256_GCM_SHA384 first: the
     * server must still take the one of the key's hash.
     */
    @Test
    void opensslPskClientGetsIcResp() throws Exception {
        Tools.require("openssl", "/usr/bin/openssl");
        String key = configureKey(32);
        listen("required");
        for (int version : new int[]{0, 1}) {
            TlsPskClient c = client(key, version, HOST, TargetFixture.NQN);
            Path log = Files.createTempFile("s_client", ".log");
            List<String> command = new ArrayList<>(List.of("openssl", "s_client", "-connect", "127.0.0.1:" + tlsPort, "-tls1_3",
                    "-psk_identity", c.identity(), "-psk", HexFormat.of().formatHex(c.key()), "-quiet"));
            if (version == 0) command.addAll(List.of("-ciphersuites", "TLS_AES_128_GCM_SHA256"));
            Process p = new ProcessBuilder(command).redirectError(log.toFile()).start();
            try {
                p.getOutputStream().write(HostPdus.icRequest(0));
                p.getOutputStream().flush();
                byte[] resp = readFully(p.getInputStream(), Pdu.IC_HLEN);
                assertEquals(Pdu.TYPE_IC_RESP, resp[Pdu.TYPE], "ICResp from version " + version + ": " + Files.readString(log));
            } finally {
                p.destroy();
                p.waitFor();
                Files.delete(log);
            }
        }
    }

    private static byte[] readFully(InputStream in, int n) throws IOException {
        byte[] b = in.readNBytes(n);
        if (b.length != n) throw new IOException("EOF after " + b.length + " of " + n + " bytes");
        return b;
    }

    /** The project's host over TLS (SHA-384 and SHA-256 keys, identity versions 0 and 1): admin queue, IO queue, data both ways. */
    @Test
    void testHostDoesIoOverTls() throws Exception {
        listen("required");
        for (int bytes : new int[]{48, 32}) {
            String key = configureKey(bytes);
            TlsPskClient tls = client(key, bytes == 48 ? 1 : 0, HOST, TargetFixture.NQN);
            try (TestHost admin = new TestHost("127.0.0.1", tlsPort, true, true, tls)) {
                int cntlid = admin.bringUp(TargetFixture.NQN, HOST, 5000);
                try (TestHost io = new TestHost("127.0.0.1", tlsPort, false, false, tls)) {
                    assertEquals(0, io.connect(TargetFixture.NQN, HOST, 1, cntlid, 128, 0, false).status());
                    byte[] data = new byte[1 << 20];
                    new SecureRandom().nextBytes(data);
                    assertEquals(0, io.execute(io.lbaCommand(0x01, 1, 0, 2048, 0), data, 0, false).status(), "1 MiB write through R2T");
                    assertArrayEquals(data, io.execute(io.lbaCommand(0x02, 1, 0, 2048, 0), null, 1 << 20, false).data());
                    byte[] small = Arrays.copyOf(data, 4096);
                    assertEquals(0, io.execute(io.lbaCommand(0x01, 1, 8, 8, 0), small, 0, true).status(), "in-capsule write");
                    assertArrayEquals(small, io.execute(io.lbaCommand(0x02, 1, 8, 8, 0), null, 4096, false).data());
                }
            }
        }
    }

    /** DH-HMAC-CHAP inside TLS: the host authenticates its queue as it would in plaintext, then runs commands. */
    @Test
    void dhHmacChapRunsInsideTls() throws Exception {
        String secure = "nqn.2026-11.io.iotarget:secure";
        f.tree.mkdir("subsystems/" + secure);
        f.tree.mkdir("subsystems/" + secure + "/namespaces/1");
        f.tree.write("subsystems/" + secure + "/namespaces/1/device_path", "default");
        f.tree.write("subsystems/" + secure + "/namespaces/1/enable", "1");
        f.tree.link("hosts/" + HOST, "subsystems/" + secure + "/allowed_hosts/" + HOST);
        String secret = TestChapHost.newSecret(1, 32);
        f.tree.write("hosts/" + HOST + "/dhchap_key", secret);
        String key = configureKey(48);
        f.tree.write("ports/2/addr_treq", "required");
        tlsPort = TargetFixture.listen(f.tree, "subsystems/" + secure, "ports/2", secure);
        try (TestHost h = new TestHost("127.0.0.1", tlsPort, false, false, client(key, 1, HOST, secure))) {
            TestHost.Completion c = h.connect(secure, HOST, 0, 0xFFFF, 32, 5000, false);
            assertEquals(0, c.status(), "admin Connect");
            assertEquals(1, c.result() >>> 17 & 1, "AUTHREQ.ATR (bit 17): authentication still required inside TLS");
            assertEquals(0, h.propertySet(0x14, 0x460001).status());
            h.authenticate(new TestChapHost(HOST, secure, secret, null), false);
            assertEquals(0, h.identify(1, 0).status(), "Identify once authenticated");
        }
    }

    @Test
    void requiredRefusesPlaintextAndWrongKeys() throws Exception {
        String key = configureKey(32);
        listen("required");
        assertThrows(IOException.class, () -> new TestHost(tlsPort, false, false).close(), "a plaintext host: its ICReq fails the handshake");
        TlsPskClient right = client(key, 1, HOST, TargetFixture.NQN);
        TlsPskClient wrongKey = new TlsPskClient(right.identity(), new byte[32], false);
        assertThrows(IOException.class, () -> new TestHost("127.0.0.1", tlsPort, false, false, wrongKey).close(), "binder with another key");
        TlsPskClient unknown = client(key, 1, OTHER_HOST, TargetFixture.NQN);
        assertThrows(IOException.class, () -> new TestHost("127.0.0.1", tlsPort, false, false, unknown).close(), "a host without tls_key");
        try (TestHost h = new TestHost("127.0.0.1", tlsPort, false, false, right)) {
            TestHost.Completion c = h.connect(TargetFixture.NQN, OTHER_HOST, 0, 0xFFFF, 32, 5000, false);
            assertEquals(Status.CONNECT_INVALID_HOST | Status.DNR, c.status(), "Connect as another host than the key's");
        }
    }

    @Test
    void notRequiredTakesBothAndDiscoveryTellsTls() throws Exception {
        String key = configureKey(48);
        listen("not required");
        try (TestHost plain = new TestHost(tlsPort, false, false)) {
            plain.bringUp(TargetFixture.NQN, HOST, 5000);
        }
        try (TestHost h = new TestHost("127.0.0.1", tlsPort, false, false, client(key, 1, HOST, DISCOVERY))) {
            h.bringUp(DISCOVERY, HOST, 5000);
            ByteBuffer log = ByteBuffer.wrap(h.getLogPage(0x70, 3072, 0, false).data());
            int entry = 1024 * 2;                           // after the header and the discovery subsystem's own entry
            assertEquals(TargetFixture.NQN, new String(log.array(), entry + 256, TargetFixture.NQN.length()));
            assertEquals(2 | 4, log.get(entry + 3), "TREQ: not required, SQ flow control disable supported");
            assertEquals(2, log.get(entry + 768), "TSAS: TLS 1.3");
        }
    }
}
