/**
 * A gateway group's shared configuration: the subsystems marked {@code shared}, their
 * namespaces, settings and allowed hosts, kept once in the cluster's etcd and applied by every
 * member ({@link io.iotarget.control.group.GroupConfig}; docs/cluster.md, "Gateway group
 * configuration").
 *
 * <h2>1. One key per object</h2> {@code /iotarget/groups/GROUP/config/subsystems/NQN} holds a
 * subsystem's shared attributes and its allowed hosts, {@code .../subsystems/NQN/namespaces/NSID}
 * a namespace's attributes, each a JSON object of the values a save would write. A change is
 * a compare-and-swap of the keys it touches against the mod revisions this member last saw,
 * so two members changing one object at once cannot both win; none of the keys is on a lease.
 *
 * <h2>2. Write, then store, then watch</h2> A change through a member's control endpoint is
 * first made on its own tree, which validates it exactly as before (a refused value reaches
 * nothing). The objects it changed are then swapped into the store; if the store refuses the
 * swap or cannot be reached, the member puts its tree back as it was and the client gets the
 * error. Every member, the writer included, applies what its watch of the prefix sees: the
 * writer finds its tree already equal, the others make the same change.
 *
 * <h2>3. Start</h2> A member reads the group's objects before its config's nvmet section is
 * applied (after backends, groups and exports, which namespaces name), so ports link
 * subsystems that exist; what the config file says about a subsystem the store holds is
 * ignored, with one log line, except the node's own attributes ({@code attr_cntlid_min},
 * {@code attr_cntlid_max}). A subsystem the config marks shared and the store lacks is seeded
 * into it by the first member that starts with it.
 *
 * <h2>Worked example</h2> Members gw1 and gw2 in group g; {@code write
 * /nvmet/subsystems/S/namespaces/1/enable 1} through gw1: gw1 enables its namespace (refused
 * here, as alone, if S has no attr_serial), swaps {@code .../subsystems/S/namespaces/1} from
 * {@code {..., "enable":"0"}} at revision 41 to {@code "enable":"1"} at 57, answers the CLI;
 * gw2's watch sees revision 57 and enables its own namespace 1.
 *
 * <h2>Watch</h2> A member that cannot apply what the store holds (its backend missing, a host
 * already identified the subsystem) logs it and goes on without that change.
 */
package io.iotarget.control.group;
