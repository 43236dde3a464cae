package io.iotarget.transport;

import javax.net.ssl.SSLEngine;

/**
 * Where a TLS 1.3 server finds the external pre-shared key a client names: psktool files for NBD
 * ({@link TlsPsk}), NVMe/TCP host keys derived for the identity the host sends. Any thread.
 */
public interface PskKeys {
    /** A key and the hash of its binder and key schedule: SHA-256, or SHA-384 ({@code sha384}). */
    record Psk(byte[] key, boolean sha384) {}

    /** The key for {@code identity} (the client's PSK identity, read as UTF-8), or null: no such identity. */
    Psk find(String identity);

    /** A server engine for one connection that accepts any identity this has a key for ({@link PskEngine}). */
    default SSLEngine newEngine() {
        return new PskEngine(TlsPsk.CRYPTO, this);
    }
}
