package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.frontend.nvmetcp.auth.DhChapCredentials;
import io.iotarget.frontend.nvmetcp.auth.DhChapHash;
import io.iotarget.frontend.nvmetcp.auth.DhChapSecret;
import io.iotarget.frontend.nvmetcp.auth.DhGroup;
import io.iotarget.frontend.nvmetcp.auth.TlsKey;
import io.iotarget.iocontrol.Group;

/**
 * {@code hosts/<hostnqn>}: a host NQN that subsystems may allow, with its DH-HMAC-CHAP and TLS
 * configuration and its group. Guarded by the target's configuration lock, except {@link #tlsKey},
 * which TLS handshakes read.
 */
public final class Host {
    public final String nqn;
    /** dhchap_key: the host must prove it knows this; null: it connects without authenticating. */
    DhChapSecret key;
    /** dhchap_ctrl_key: what the controller proves itself with when the host asks; null: it cannot. */
    DhChapSecret controllerKey;
    /** dhchap_hash, dhchap_dhgroup: nvmet's defaults. */
    DhChapHash hash = DhChapHash.SHA256;
    DhGroup group = DhGroup.NULL;
    /** tls_key: the configured PSK the host's TLS identities derive from; null: it cannot connect over TLS. */
    public volatile TlsKey tlsKey;

    /**
     * cgroup / cgroup_id: who pays for the host's IO on a namespace with no group of its own;
     * null: the root. Bound (rmdir is EBUSY) while the entry names it.
     */
    Group ioGroup;

    /** The host's group, or null; configuration lock held. */
    public Group ioGroup() {
        return ioGroup;
    }

    Host(String nqn) {
        this.nqn = nqn;
    }

    /** A snapshot for controllers, or null when the host has no key. */
    public DhChapCredentials credentials() {
        return key == null ? null : new DhChapCredentials(key, controllerKey, hash, group);
    }
}
