package io.iotarget.control;

import io.iotarget.cluster.GatewayGroup;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a gateway group ({@code cluster.group}) sees of this node's NVMe target, through its
 * configuration tree as an operator would: the ANA groups of the shared subsystems' namespaces,
 * and the ANA states of the ports that link a shared subsystem, written as
 * {@code ports/P/ana_groups/G/ana_state} (the directory made when missing), so the controllers of
 * that port get the ANA change AEN through the same path as an operator's write. A state already
 * right is not written again. Called on the gateway group's threads (one at a time).
 */
final class GatewayPorts implements GatewayGroup.Local {
    private static final System.Logger LOG = System.getLogger(GatewayPorts.class.getName());
    private final ConfigTree nvmet;

    GatewayPorts(ConfigTree nvmet) {
        this.nvmet = nvmet;
    }

    /** The NQNs of the subsystems with {@code shared} 1. */
    private List<String> sharedSubsystems() throws ControlException {
        List<String> out = new ArrayList<>();
        for (String entry : nvmet.list("subsystems")) {
            String nqn = entry.replace("/", "");
            if (nvmet.read("subsystems/" + nqn + "/shared").strip().equals("1")) out.add(nqn);
        }
        return out;
    }

    @Override
    public Set<Integer> anaGroups() {
        Set<Integer> groups = new TreeSet<>();
        try {
            for (String nqn : sharedSubsystems()) {
                for (String ns : nvmet.list("subsystems/" + nqn + "/namespaces")) {
                    groups.add(Integer.parseInt(nvmet.read("subsystems/" + nqn + "/namespaces/" + ns.replace("/", "") + "/ana_grpid").strip()));
                }
            }
        } catch (ControlException | RuntimeException e) {
            // Changed while read (a namespace removed): the next interval reads again.
        }
        return groups;
    }

    @Override
    public void present(Set<Integer> served, Set<Integer> optimized) {
        try {
            List<String> shared = sharedSubsystems();
            for (String entry : nvmet.list("ports")) {
                String port = "ports/" + entry.replace("/", "");
                boolean links = false;
                for (String link : nvmet.list(port + "/subsystems")) links |= shared.contains(link.replace("/", ""));
                if (!links) continue;
                for (int g : served) {
                    String dir = port + "/ana_groups/" + g;
                    if (!nvmet.list(port + "/ana_groups").contains(g + "/")) nvmet.mkdir(dir);
                    String want = optimized.contains(g) ? "optimized" : "non-optimized";
                    if (!nvmet.read(dir + "/ana_state").strip().equals(want)) nvmet.write(dir + "/ana_state", want);
                }
            }
        } catch (ControlException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "cluster: could not present ANA groups " + optimized + " optimized of " + served + ": " + e.getMessage());
        }
    }
}
