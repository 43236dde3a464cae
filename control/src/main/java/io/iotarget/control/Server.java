package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import io.iotarget.control.config.ConfigLoader;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.control.tree.BackendTree;
import io.iotarget.control.tree.CgroupTree;
import io.iotarget.control.tree.MountTable;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nbd.NbdServer;
import io.iotarget.frontend.nvmetcp.NvmeTarget;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.Device;
import io.iotarget.transport.Transport;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * A running iotarget: the engine, every front end, the mounted control trees and the control
 * endpoint, configured from one JSON document (the embedded default when none is given).
 */
public final class Server implements AutoCloseable {
    /** The control endpoint's default address, loopback only. */
    public static final InetSocketAddress DEFAULT_CONTROL = new InetSocketAddress("127.0.0.1", 9809);
    private static final String DEFAULT_CONFIG = "default-config.json";

    private final Engine engine;
    private final Transport transport;
    private final NbdServer nbd;
    private final NvmeTarget nvme;
    private final MountTable mounts;
    private final ControlEndpoint endpoint;
    private final List<String> summary;

    private Server(Engine engine, Transport transport, NbdServer nbd, NvmeTarget nvme, MountTable mounts, ControlEndpoint endpoint,
                   List<String> summary) {
        this.engine = engine;
        this.transport = transport;
        this.nbd = nbd;
        this.nvme = nvme;
        this.mounts = mounts;
        this.endpoint = endpoint;
        this.summary = summary;
    }

    /** The embedded default configuration. */
    public static JsonNode defaultConfig() throws ConfigException {
        try (InputStream in = Server.class.getResourceAsStream(DEFAULT_CONFIG)) {
            if (in == null) throw new ConfigException("the embedded " + DEFAULT_CONFIG + " is missing from the build");
            return ConfigLoader.parse(in, "embedded " + DEFAULT_CONFIG);
        } catch (IOException e) {
            throw new ConfigException("cannot read the embedded " + DEFAULT_CONFIG + ": " + e.getMessage());
        }
    }

    /** Builds everything the config describes and starts listening; on any error nothing keeps running. */
    public static Server start(JsonNode config) throws ConfigException, IOException {
        ConfigLoader.ServerSettings settings = ConfigLoader.serverSettings(config);
        Engine engine = new Engine();
        Transport transport = new Transport(Transport.Settings.defaults());
        NbdServer nbd = new NbdServer(engine, transport);
        NvmeTarget nvme = new NvmeTarget(engine, transport);
        ControlEndpoint endpoint = null;
        try {
            MountTable mounts = new MountTable()
                    .mount(MountTable.CGROUP, new CgroupTree(engine.controller()))
                    .mount("backends", new BackendTree(engine))
                    .mount("nbd", nbd.tree())
                    .mount("nvmet", nvme.tree());
            ConfigLoader.apply(config, section -> mounted(mounts, section));
            List<String> summary = new ArrayList<>();
            for (InetSocketAddress address : settings.nbd()) nbd.listen(address);
            for (InetSocketAddress address : nbd.localAddresses()) {
                summary.add("NBD on " + hostPort(address) + " (exports: " + String.join(", ", exportNames(nbd)) + ")");
            }
            summary.addAll(nvmePorts(nvme.tree()));
            InetSocketAddress control = settings.control() != null ? settings.control() : DEFAULT_CONTROL;
            endpoint = new ControlEndpoint(control, mounts, () -> deviceTable(engine));
            summary.add("control endpoint http://" + hostPort(endpoint.address()));
            return new Server(engine, transport, nbd, nvme, mounts, endpoint, summary);
        } catch (ConfigException | IOException | RuntimeException e) {
            if (endpoint != null) endpoint.close();
            nbd.close();
            nvme.close();
            transport.close();
            engine.close();
            throw e;
        }
    }

    private static ConfigTree mounted(MountTable mounts, String section) {
        try {
            return mounts.resolve("/" + section).tree();
        } catch (io.iotarget.model.ControlException e) {
            return null;
        }
    }

    /** "NVMe/TCP on ADDR:PORT (NQN, ...)" for every port with linked subsystems. */
    private static List<String> nvmePorts(ConfigTree nvmet) {
        List<String> lines = new ArrayList<>();
        try {
            for (String port : nvmet.list("ports")) {
                String p = "ports/" + port.replace("/", "");
                List<String> subsystems = nvmet.list(p + "/subsystems");
                if (subsystems.isEmpty()) continue;
                lines.add("NVMe/TCP on " + nvmet.read(p + "/addr_traddr").strip() + ":" + nvmet.read(p + "/addr_trsvcid").strip()
                          + " (" + String.join(", ", subsystems) + ")");
            }
        } catch (io.iotarget.model.ControlException e) {
            lines.add("NVMe/TCP: " + e.getMessage());
        }
        return lines;
    }

    private static List<String> exportNames(NbdServer nbd) {
        try {
            return nbd.tree().list("exports").stream().map(n -> n.endsWith("/") ? n.substring(0, n.length() - 1) : n).toList();
        } catch (io.iotarget.model.ControlException e) {
            return List.of();
        }
    }

    public Engine engine() {
        return engine;
    }

    public MountTable mounts() {
        return mounts;
    }

    public InetSocketAddress controlAddress() {
        return endpoint.address();
    }

    /** Where NBD clients connect (the ports actually bound). */
    public List<InetSocketAddress> nbdAddresses() {
        return nbd.localAddresses();
    }

    /** One line per listener, for the start-up message. */
    public List<String> summary() {
        return summary;
    }

    /** The {@code devices} table: name, MAJ:MIN, size, backend type, users. */
    public static String deviceTable(Engine engine) {
        StringBuilder sb = new StringBuilder(String.format("%-16s %-8s %16s %-7s %s%n", "NAME", "MAJ:MIN", "SIZE", "TYPE", "USERS"));
        for (Device d : engine.devices()) {
            sb.append(String.format("%-16s %-8s %16d %-7s %d%n", d.name(), d.number(), d.sizeBytes(),
                    engine.backend(d).kind() + (d.readOnly() ? ",ro" : ""), engine.users(d)));
        }
        return sb.toString();
    }

    static String hostPort(InetSocketAddress a) {
        String host = a.getAddress().getHostAddress();
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
    }

    /** Front ends first (they answer what they accepted), their transport, then the control endpoint, then the engine. */
    @Override
    public void close() {
        nbd.close();
        nvme.close();
        transport.close();
        endpoint.close();
        engine.close();
    }
}
