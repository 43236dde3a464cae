package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.engine.Engine;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.Attribute;
import io.iotarget.model.tree.Attributes;
import io.iotarget.model.tree.KernelParse;

import java.util.List;

/**
 * A subsystem's attributes ({@code subsystems/NQN/attr_*}, iotarget's {@code shared}) with nvmet's
 * parsers and errnos: what Identify Controller reports is fixed once a host has identified the
 * subsystem. For {@link NvmetTree} only, with the target's configuration lock held.
 */
final class SubsystemAttributes {
    private SubsystemAttributes() {}

    static Attributes<Subsystem> all(Engine engine, ConfigEvents events) {
        return Attributes.of(List.of(
                Attribute.flag("attr_allow_any_host", s -> s.allowAnyHost, (s, v) -> writeAllowAnyHost(events, s, v)),
                Attribute.text("attr_version", s -> versionText(s.version), SubsystemAttributes::writeVersion),
                Attribute.text("attr_serial", s -> s.serial, SubsystemAttributes::writeSerial),
                Attribute.text("attr_model", s -> s.model, SubsystemAttributes::writeModel),
                Attribute.text("attr_firmware", s -> s.firmware, SubsystemAttributes::writeFirmware),
                Attribute.text("attr_cntlid_min", s -> Integer.toString(s.cntlidMin), SubsystemAttributes::writeCntlidMin),
                Attribute.text("attr_cntlid_max", s -> Integer.toString(s.cntlidMax), SubsystemAttributes::writeCntlidMax),
                Attribute.text("attr_qid_max", s -> Integer.toString(s.maxQid), (s, v) -> writeQidMax(events, s, v)),
                Attribute.flag("shared", s -> s.shared, (s, v) -> writeShared(engine, s, v))));
    }

    private static void writeAllowAnyHost(ConfigEvents events, Subsystem s, boolean allow) throws ControlException {
        if (allow && !s.allowedHosts.isEmpty()) {
            throw new ControlException(Errno.EINVAL, "attr_allow_any_host=1: allowed_hosts has " + s.allowedHosts.size() + " link(s) (expected: none)");
        }
        if (s.allowAnyHost != allow) {
            s.allowAnyHost = allow;
            events.discoveryChanged();
        }
    }

    private static void writeVersion(Subsystem s, String value) throws ControlException {
        fixedAfterDiscovery(s, "attr_version", value);
        String[] parts = value.strip().split("\\.");
        if (parts.length < 2 || parts.length > 3) throw KernelParse.invalid("attr_version", value, "major.minor or major.minor.tertiary");
        int[] v = new int[3];
        for (int i = 0; i < parts.length; i++) v[i] = (int) KernelText.unsigned("attr_version", parts[i], 0xFF, "major.minor[.tertiary], each 0..255");
        if (v[0] > 0xFFFF) throw KernelParse.invalid("attr_version", value, "major.minor[.tertiary]");
        s.version = Subsystem.version(v[0], v[1], v[2]);
    }

    private static void writeSerial(Subsystem s, String value) throws ControlException {
        fixedAfterDiscovery(s, "attr_serial", value);
        s.serial = printable("attr_serial", value, Subsystem.SERIAL_BYTES);
        s.serialWritten = true;
    }

    private static void writeModel(Subsystem s, String value) throws ControlException {
        fixedAfterDiscovery(s, "attr_model", value);
        s.model = printable("attr_model", value, Subsystem.MODEL_BYTES);
    }

    private static void writeFirmware(Subsystem s, String value) throws ControlException {
        fixedAfterDiscovery(s, "attr_firmware", value);
        s.firmware = printable("attr_firmware", value, Subsystem.FIRMWARE_BYTES);
    }

    private static void writeCntlidMin(Subsystem s, String value) throws ControlException {
        int min = (int) KernelText.unsigned("attr_cntlid_min", value, 0xFFFF, "1..attr_cntlid_max");
        if (min == 0 || min > s.cntlidMax) throw KernelParse.invalid("attr_cntlid_min", value, "1.." + s.cntlidMax);
        s.cntlidMin = min;
    }

    private static void writeCntlidMax(Subsystem s, String value) throws ControlException {
        int max = (int) KernelText.unsigned("attr_cntlid_max", value, 0xFFFF, "attr_cntlid_min..65535");
        if (max == 0 || max < s.cntlidMin) throw KernelParse.invalid("attr_cntlid_max", value, s.cntlidMin + "..65535");
        s.cntlidMax = max;
    }

    /**
     * iotarget's {@code shared}: other nodes serve the subsystem too. Its enabled namespaces must
     * already be what a namespace of a shared subsystem must be to enable.
     */
    private static void writeShared(Engine engine, Subsystem s, boolean shared) throws ControlException {
        if (shared) {
            for (Namespace ns : s.namespaces.values()) {
                if (!ns.enabled()) continue;
                String reason = ns.unshareable(engine.backend(ns.active.device()));
                if (reason != null) throw new ControlException(Errno.EINVAL, "shared=1: " + reason + " (namespace " + Integer.toUnsignedString(ns.nsid) + " is enabled)");
            }
        }
        s.shared = shared;
    }

    /** As nvmet: a new maximum forces every controller of the subsystem to reconnect. */
    private static void writeQidMax(ConfigEvents events, Subsystem s, String value) throws ControlException {
        int max = (int) KernelText.unsigned("attr_qid_max", value, 0xFFFF, "1.." + Subsystem.MAX_QID_LIMIT);
        if (max < 1 || max > Subsystem.MAX_QID_LIMIT) throw KernelParse.invalid("attr_qid_max", value, "1.." + Subsystem.MAX_QID_LIMIT);
        s.maxQid = max;
        events.controllersFail(s, null);
    }

    private static void fixedAfterDiscovery(Subsystem s, String attribute, String value) throws ControlException {
        if (s.discovered) {
            throw new ControlException(Errno.EINVAL, attribute + "=" + value + ": a host has identified the subsystem; "
                    + attribute + " is fixed until the subsystem is recreated");
        }
    }

    // ---------------------------------------------------------------- formats

    private static String versionText(int vs) {
        int major = vs >>> 16, minor = (vs >>> 8) & 0xFF, tertiary = vs & 0xFF;
        return tertiary == 0 ? major + "." + minor : major + "." + minor + "." + tertiary;
    }

    private static String printable(String attribute, String value, int max) throws ControlException {
        if (value.isEmpty() || value.length() > max) throw KernelParse.invalid(attribute, value, "1.." + max + " printable ASCII characters");
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c > 0x7e) throw KernelParse.invalid(attribute, value, "1.." + max + " printable ASCII characters");
        }
        return value;
    }
}
