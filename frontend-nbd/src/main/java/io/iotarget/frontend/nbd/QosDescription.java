package io.iotarget.frontend.nbd;

import io.iotarget.engine.QosSnapshot;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.HostGroupName;
import io.iotarget.iocontrol.HostIdentity;
import io.iotarget.iocontrol.IoController;
import io.iotarget.model.ControlException;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The export description a client gets in NBD_INFO_DESCRIPTION (NBD's way to the numbers of
 * the NVMe/TCP QoS log page, docs/qos-log.md): the operator's {@code description}, then the
 * client's own group's lines of io.max, io.min, io.max.burst.stat, io.latency, io.weight,
 * io.stat, iotarget.io.stat and io.pressure for the export's device, each prefixed with its
 * file's name and otherwise as a read of the file shows it — the group that pays for this
 * client's IO, under {@code cgroup_per_host} its own child, never a neighbour's. Read from one
 * {@link QosSnapshot} when the client asks (NBD_OPT_INFO or NBD_OPT_GO with the description
 * among its requests). Stateless; the connection's loop thread (takes the group tree's lock per
 * file, as a read of each does).
 */
final class QosDescription {
    /** The protocol's limit for a string in an option reply, the description included. */
    static final int MAX_BYTES = NbdWire.MAX_STRING;
    /** The first QoS line: the group the numbers are for. */
    static final String GROUP_KEY = "iotarget.group";

    private QosDescription() {
    }

    /**
     * The description of {@code export} for a client that is {@code host} under
     * {@code cgroup_per_host}; at most {@link #MAX_BYTES} bytes of UTF-8 (iotarget.io.stat's
     * {@code lat_hist} goes first, then whole lines from the end, when it would not fit).
     *
     * @param nowMs wall-clock milliseconds since the Unix epoch, shown on the group line
     */
    static String of(Export export, HostIdentity host, IoController controller, long nowMs) {
        List<String> lines = new ArrayList<>();
        if (!export.description().isEmpty()) lines.add(export.description());
        Group group = export.group();
        String own = "";
        if (export.perHost()) {
            String path = (group.path().equals("/") ? "" : group.path()) + "/" + HostGroupName.of(host);
            try {
                group = controller.group(path);
                own = " (this client's own, cgroup_per_host)";
            } catch (ControlException notYet) {
                // The first transmission of this client makes its group: nothing to show before.
                lines.add(GROUP_KEY + " " + path + " (this client's own, cgroup_per_host: made when it first transmits; no values yet)");
                return fit(lines);
            }
        }
        QosSnapshot s = QosSnapshot.of(controller, group, export.device().number(), nowMs);
        lines.add(GROUP_KEY + " " + s.groupPath() + " device " + s.device() + " time_ms " + s.takenAtMs() + own);
        for (String file : QosSnapshot.FILES) {
            for (String line : s.lines(file)) lines.add(file + " " + line);
        }
        return fit(lines);
    }

    private static String fit(List<String> lines) {
        String text = String.join("\n", lines);
        if (bytes(text) <= MAX_BYTES) return text;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            int at = line.startsWith("iotarget.io.stat ") ? line.indexOf(" lat_hist=") : -1;
            if (at >= 0) lines.set(i, line.substring(0, at) + " lat_hist=(left out: over NBD's 4096-byte description)");
        }
        while (lines.size() > 1 && bytes(String.join("\n", lines)) > MAX_BYTES) lines.removeLast();
        text = String.join("\n", lines);
        if (bytes(text) <= MAX_BYTES) return text;
        // One line (the operator's description) over the limit: cut it on a character boundary.
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        int end = MAX_BYTES;
        while (end > 0 && (b[end] & 0xC0) == 0x80) end--;
        return new String(b, 0, end, StandardCharsets.UTF_8);
    }

    private static int bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }
}
