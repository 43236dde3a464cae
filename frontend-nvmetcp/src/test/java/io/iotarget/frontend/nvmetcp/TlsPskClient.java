package io.iotarget.frontend.nvmetcp;

import org.bouncycastle.tls.AbstractTlsClient;
import org.bouncycastle.tls.BasicTlsPSKExternal;
import org.bouncycastle.tls.CipherSuite;
import org.bouncycastle.tls.PRFAlgorithm;
import org.bouncycastle.tls.ProtocolVersion;
import org.bouncycastle.tls.TlsAuthentication;
import org.bouncycastle.tls.TlsClientProtocol;
import org.bouncycastle.tls.TlsPSKExternal;
import org.bouncycastle.tls.crypto.impl.jcajce.JcaTlsCryptoProvider;

import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Vector;

/**
 * The client side of NVMe/TCP's TLS for {@link TestHost}: TLS 1.3 with one external PSK under
 * its identity, psk_dhe_ke, the suite the key's hash pairs with (what tlshd does for a Linux
 * host: TLS_AES_128_GCM_SHA256 for SHA-256 keys, TLS_AES_256_GCM_SHA384 for SHA-384 ones).
 */
public record TlsPskClient(String identity, byte[] key, boolean sha384) {
    /** Runs the handshake on {@code socket}; the protocol's streams then carry NVMe/TCP. */
    public TlsClientProtocol handshake(Socket socket) throws IOException {
        TlsClientProtocol protocol = new TlsClientProtocol(socket.getInputStream(), socket.getOutputStream());
        protocol.connect(new AbstractTlsClient(new JcaTlsCryptoProvider().create(new SecureRandom())) {
            @Override
            protected ProtocolVersion[] getSupportedVersions() {
                return ProtocolVersion.TLSv13.only();
            }

            @Override
            protected int[] getSupportedCipherSuites() {
                return new int[]{sha384 ? CipherSuite.TLS_AES_256_GCM_SHA384 : CipherSuite.TLS_AES_128_GCM_SHA256};
            }

            @Override
            public Vector<TlsPSKExternal> getExternalPSKs() {
                Vector<TlsPSKExternal> psks = new Vector<>();
                psks.add(new BasicTlsPSKExternal(identity.getBytes(StandardCharsets.UTF_8), getCrypto().createSecret(key),
                        sha384 ? PRFAlgorithm.tls13_hkdf_sha384 : PRFAlgorithm.tls13_hkdf_sha256));
                return psks;
            }

            @Override
            public TlsAuthentication getAuthentication() throws IOException {
                throw new IOException("a PSK handshake has no server certificate");
            }
        });
        return protocol;
    }
}
