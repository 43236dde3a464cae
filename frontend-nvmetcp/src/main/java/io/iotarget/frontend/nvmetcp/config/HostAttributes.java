package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.frontend.nvmetcp.auth.DhChapHash;
import io.iotarget.frontend.nvmetcp.auth.DhChapSecret;
import io.iotarget.frontend.nvmetcp.auth.DhGroup;
import io.iotarget.frontend.nvmetcp.auth.TlsKey;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.Attribute;
import io.iotarget.model.tree.Attributes;
import io.iotarget.model.tree.GroupBinding;
import io.iotarget.model.tree.KernelParse;

import java.util.ArrayList;
import java.util.List;

/**
 * A host's attributes: DH-HMAC-CHAP ({@code hosts/NQN/dhchap_*}), as nvmet reads and shows them,
 * its TLS pre-shared key ({@code tls_key}, iotarget's: nvmet takes TLS keys from the kernel
 * keyring, where {@code nvme gen-tls-key --insert} puts the derived key), and the group its IO is
 * charged to on a namespace without one ({@code cgroup}, {@code cgroup_id}).
 */
final class HostAttributes {
    static final List<Attribute<Host>> DHCHAP = List.of(
            Attribute.text("dhchap_key", h -> h.key == null ? "" : h.key.text(), (h, v) -> h.key = secret("dhchap_key", v)),
            Attribute.text("dhchap_ctrl_key", h -> h.controllerKey == null ? "" : h.controllerKey.text(),
                    (h, v) -> h.controllerKey = secret("dhchap_ctrl_key", v)),
            Attribute.text("dhchap_hash", h -> h.hash.configName(), HostAttributes::writeDhchapHash),
            Attribute.text("dhchap_dhgroup", h -> h.group.configName(), HostAttributes::writeDhchapGroup));
    static final Attribute<Host> TLS_KEY = Attribute.text("tls_key", h -> h.tlsKey == null ? "" : h.tlsKey.text(), HostAttributes::writeTlsKey);

    private HostAttributes() {}

    /**
     * Every attribute of a host entry. The group binding ({@link GroupBinding}) holds the group
     * while the entry names it, as an enabled namespace holds its own: removing the group is
     * EBUSY until the entry names another or goes. It applies to controllers that connect after
     * the write; those connected keep the group they started with.
     */
    static Attributes<Host> all(IoController controller, GroupBinding.Groups<Group> groups) {
        GroupBinding.Binder<Host, Group> binder = (h, group, write) -> {
            if (group == h.ioGroup) return;
            if (group != null) controller.bind(group);
            if (h.ioGroup != null) controller.unbind(h.ioGroup);
            h.ioGroup = group;
        };
        List<Attribute<Host>> all = new ArrayList<>(DHCHAP);
        all.add(TLS_KEY);
        all.add(GroupBinding.cgroupId(groups, h -> h.ioGroup, binder));
        all.add(GroupBinding.cgroup(groups, h -> h.ioGroup, binder));
        return Attributes.of(all);
    }

    /** A DH-HMAC-CHAP secret; "" removes it. The message names what is wrong, never the secret. */
    private static DhChapSecret secret(String attribute, String value) throws ControlException {
        if (value.isBlank()) return null;
        try {
            return DhChapSecret.parse(value);
        } catch (IllegalArgumentException e) {
            throw new ControlException(Errno.EINVAL, attribute + ": " + e.getMessage());
        }
    }

    /** An NVMe TLS PSK in interchange format ({@link TlsKey}); "" removes it. The message never quotes the key. */
    private static void writeTlsKey(Host h, String value) throws ControlException {
        if (value.isBlank()) {
            h.tlsKey = null;
            return;
        }
        try {
            h.tlsKey = TlsKey.parse(value);
        } catch (IllegalArgumentException e) {
            throw new ControlException(Errno.EINVAL, "tls_key: " + e.getMessage());
        }
    }

    private static void writeDhchapHash(Host h, String value) throws ControlException {
        DhChapHash hash = DhChapHash.byConfigName(value.strip());
        if (hash == null) throw KernelParse.invalid("dhchap_hash", value, "hmac(sha256), hmac(sha384) or hmac(sha512)");
        h.hash = hash;
    }

    private static void writeDhchapGroup(Host h, String value) throws ControlException {
        DhGroup group = DhGroup.byConfigName(value.strip());
        if (group == null) throw KernelParse.invalid("dhchap_dhgroup", value, "null, ffdhe2048, ffdhe3072, ffdhe4096, ffdhe6144 or ffdhe8192");
        h.group = group;
    }
}
