package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.engine.Engine;
import io.iotarget.frontend.nvmetcp.reservation.Reservations;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.Attribute;
import io.iotarget.model.tree.Attributes;
import io.iotarget.model.tree.GroupBinding;
import io.iotarget.model.tree.KernelParse;

import java.util.HexFormat;
import java.util.List;
import java.util.UUID;

/**
 * A namespace's attributes ({@code subsystems/NQN/namespaces/NSID/*}) with nvmet's parsers and
 * errnos: all but {@code ana_grpid} and {@code enable} are fixed while the namespace is enabled;
 * enable and disable ({@code nvmet_ns_enable}, {@code nvmet_ns_disable}), and the notices the
 * subsystem's controllers get when a namespace changes. For {@link NvmetTree} only, with the
 * target's configuration lock held ({@link #disable} lets it go while commands drain).
 */
final class NamespaceAttributes {
    private NamespaceAttributes() {}

    /** Every attribute of a namespace, {@code enable} last so that a listing replays it last. */
    static Attributes<Namespace> all(NvmetConfig config, Engine engine, Reservations reservations, ConfigEvents events) {
        return Attributes.of(List.of(
                Attribute.text("device_path", ns -> ns.devicePath == null ? "(null)" : ns.devicePath, NamespaceAttributes::writeDevicePath)
                         .replayedAs(ns -> ns.devicePath == null ? List.of() : List.of(ns.devicePath)),
                Attribute.text("device_uuid", ns -> ns.uuid.toString(), NamespaceAttributes::writeDeviceUuid),
                Attribute.text("device_nguid", ns -> uuidText(ns.nguid), NamespaceAttributes::writeDeviceNguid),
                Attribute.flag("readonly", ns -> ns.readOnly, NamespaceAttributes::writeReadOnly),
                Attribute.flag("buffered_io", ns -> ns.bufferedIo, NamespaceAttributes::writeBufferedIo),
                Attribute.text("ana_grpid", ns -> Integer.toString(ns.anaGroup), (ns, v) -> writeAnaGroup(events, ns, v)),
                GroupBinding.cgroupId(engine.groups(), ns -> ns.group, NamespaceAttributes::bindGroup),
                GroupBinding.cgroup(engine.groups(), ns -> ns.group, NamespaceAttributes::bindGroup),
                Attribute.flag("cgroup_per_host", ns -> ns.perHost, NamespaceAttributes::writePerHost),
                Attribute.flag("resv_enable", ns -> ns.reservations, NamespaceAttributes::writeReservations),
                Attribute.flag("enable", Namespace::enabled, (ns, v) -> writeEnable(config, engine, reservations, events, ns, v))));
    }

    private static void requireDisabled(Namespace ns, String write) throws ControlException {
        if (ns.enabled()) throw new ControlException(Errno.EBUSY, write + ": namespace " + Integer.toUnsignedString(ns.nsid) + " is enabled (write enable=0 first)");
    }

    private static void writeDevicePath(Namespace ns, String value) throws ControlException {
        requireDisabled(ns, "device_path=" + value);
        if (value.isEmpty()) throw KernelParse.invalid("device_path", value, "an engine device name or an absolute path");
        ns.devicePath = value;
    }

    private static void writeDeviceUuid(Namespace ns, String value) throws ControlException {
        requireDisabled(ns, "device_uuid=" + value);
        String v = value.strip();
        if (!v.matches("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")) {
            throw KernelParse.invalid("device_uuid", value, "a UUID like 0b6f8b4e-1c3d-4c5e-9f7a-2b3c4d5e6f70");
        }
        ns.uuid = UUID.fromString(v);
        ns.uuidWritten = true;
    }

    /** 16 bytes in hex, '-' or ':' allowed after any byte (nvmet's parser). */
    private static void writeDeviceNguid(Namespace ns, String value) throws ControlException {
        requireDisabled(ns, "device_nguid=" + value);
        String v = value.strip();
        byte[] nguid = new byte[16];
        int p = 0;
        for (int i = 0; i < 16; i++) {
            if (p + 2 > v.length() || Character.digit(v.charAt(p), 16) < 0 || Character.digit(v.charAt(p + 1), 16) < 0) {
                throw KernelParse.invalid("device_nguid", value, "16 bytes in hex, optionally separated by - or :");
            }
            nguid[i] = (byte) HexFormat.fromHexDigits(v, p, p + 2);
            p += 2;
            if (p < v.length() && (v.charAt(p) == '-' || v.charAt(p) == ':')) p++;
        }
        ns.nguid = nguid;
    }

    private static void writeReadOnly(Namespace ns, boolean readOnly) throws ControlException {
        requireDisabled(ns, "readonly=" + (readOnly ? "1" : "0"));
        ns.readOnly = readOnly;
    }

    /** nvmet's resv_enable: only while the namespace is disabled. */
    private static void writeReservations(Namespace ns, boolean on) throws ControlException {
        requireDisabled(ns, "resv_enable=" + (on ? "1" : "0"));
        ns.reservations = on;
    }

    private static void writeBufferedIo(Namespace ns, boolean buffered) throws ControlException {
        if (ns.enabled()) throw new ControlException(Errno.EINVAL, "buffered_io=" + (buffered ? "1" : "0") + ": namespace is enabled (write enable=0 first)");
        ns.bufferedIo = buffered;
    }

    /** cgroup_id and cgroup ({@link GroupBinding}): fixed while the namespace is enabled. */
    private static void bindGroup(Namespace ns, Group group, String write) throws ControlException {
        requireDisabled(ns, write);
        ns.group = group;
    }

    /** cgroup_per_host: fixed while enabled, as the binding is, so no connected host changes payer. */
    private static void writePerHost(Namespace ns, boolean perHost) throws ControlException {
        requireDisabled(ns, "cgroup_per_host=" + (perHost ? "1" : "0"));
        ns.perHost = perHost;
    }

    private static void writeEnable(NvmetConfig config, Engine engine, Reservations reservations, ConfigEvents events,
                                    Namespace ns, boolean enable) throws ControlException {
        if (enable == ns.enabled()) return;
        if (enable) ns.enable(engine, reservations);
        else disable(config, engine, ns);
        namespaceChanged(events, ns);
    }

    /**
     * nvmet_ns_disable: new commands are refused under the configuration lock, and the wait for
     * those in flight, which io.max may hold for long, runs without it, so that one tenant's
     * draining namespace never stalls other hosts' connects or the rest of the configuration;
     * the device and group are let go under the lock again. The lock is held once on entry.
     */
    static void disable(NvmetConfig target, Engine engine, Namespace ns) {
        InFlightCommands inFlight = ns.stop();
        if (inFlight == null) return;
        ns.subsystem.publishTable();
        target.unlock();
        try {
            inFlight.await();
        } finally {
            target.lock();
        }
        ns.release(engine);
    }

    /** A namespace whose disable waits for its commands in flight takes no change until that is done. */
    static void requireSettled(Namespace ns, String path) throws ControlException {
        if (ns.draining()) {
            throw new ControlException(Errno.EBUSY, path + ": namespace " + Integer.toUnsignedString(ns.nsid)
                    + " is being disabled (waiting for its commands in flight)");
        }
    }

    /**
     * ANA groups {@code ana_grpid auto} spreads namespaces over: 8, so that up to 8 members of a
     * gateway group each own one and a move shifts an eighth of the namespaces (docs/ha.md).
     */
    public static final int AUTO_ANA_GROUPS = 8;

    /**
     * nvmet's ana_grpid: any group id 1..128; the subsystem's controllers are told. iotarget's
     * {@code auto}: group (nsid − 1) mod {@link #AUTO_ANA_GROUPS} + 1, a function of the nsid alone,
     * so every node of a gateway group puts the namespace in the same group without asking the
     * others; it reads back as the number.
     */
    private static void writeAnaGroup(ConfigEvents events, Namespace ns, String value) throws ControlException {
        long grpid = value.strip().equals("auto") ? Integer.remainderUnsigned(ns.nsid - 1, AUTO_ANA_GROUPS) + 1
                : KernelText.unsigned("ana_grpid", value, 0xFFFFFFFFL, "a group id 1.." + Port.MAX_ANA_GROUPS + ", or auto");
        if (grpid < Port.DEFAULT_ANA_GROUP || grpid > Port.MAX_ANA_GROUPS) throw KernelParse.invalid("ana_grpid", value, "a group id 1.." + Port.MAX_ANA_GROUPS + ", or auto");
        ns.anaGroup((int) grpid);
        ns.subsystem.publishTable();
        events.anaChanged();
        events.subsystemAnaChanged(ns.subsystem);
    }

    /** The subsystem's table changes and its controllers' hosts are told (AEN, changed namespace list). */
    static void namespaceChanged(ConfigEvents events, Namespace ns) {
        ns.subsystem.publishTable();
        events.namespaceChanged(ns.subsystem, ns.nsid);
    }

    // ---------------------------------------------------------------- formats

    /** nvmet shows NGUIDs as it shows UUIDs (%pUb). */
    private static String uuidText(byte[] b) {
        String hex = HexFormat.of().formatHex(b);
        return hex.substring(0, 8) + "-" + hex.substring(8, 12) + "-" + hex.substring(12, 16) + "-" + hex.substring(16, 20) + "-" + hex.substring(20);
    }
}
