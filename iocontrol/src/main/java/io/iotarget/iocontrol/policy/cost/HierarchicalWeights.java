package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.policy.MulDiv;

import java.util.ArrayList;
import java.util.List;

import static io.iotarget.iocontrol.policy.cost.CostTunables.MARGIN_TARGET_PCT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.WEIGHT_ONE;

/**
 * The weight arithmetic of iocost on one device (package documentation, sections 2 and 5):
 * each active group's share of the device, {@code hweight}, from the weights along its path to
 * the root; the propagation of a weight change up the tree; and donation, where groups that do
 * not use their share lower their {@code inuse} weight so that the others' shares grow. The
 * nodes are the device's {@link CostGroup}s, and the fields this class keeps on them are those
 * under "weights" and "hierarchical weights" there. All weights are × {@link CostTunables#WEIGHT_ONE}.
 *
 * <p>It knows nothing of time, vtime or budgets: {@link CostDevice} decides who is active and
 * who donates how much, and asks this class what that means for everyone's weights.
 *
 * <p>Threads: the device lock (it belongs to the device's {@link CostDevice}).
 */
final class HierarchicalWeights {
    /*
     * Maintainers' notes. The methods are the kernel's: propagate is __propagate_weights without
     * the saved margin (a budget, which CostDevice keeps), commit is commit_weights,
     * currentHweight and currentHweightMax are current_hweight and current_hweight_max, and
     * transferSurpluses with inuseAfterDonation is transfer_surpluses. Rounding follows the
     * kernel's operation by operation (its DIV64_U64_ROUND_UP is MulDiv.ceil), so the numbers
     * agree to the unit; do not "simplify" a ceil into a floor.
     */

    /** Generation of the weights: hweight caches of an older one are stale. */
    private int generation;
    /** A propagation changed a sum since the last commit. */
    private boolean updated;
    /** Scratch for transferSurpluses: the donors' inner ancestors, parents before children. */
    private final ArrayList<CostGroup> innerWalk = new ArrayList<>();

    /**
     * Sets the group's active and inuse weights and walks up, updating each parent's child sums
     * and the parent's own weights, until a level does not change. An inner node's inuse follows
     * its children's inuse/active ratio, whatever {@code inuse} says; a leaf's is kept within
     * [1, active] (0 and 0 deactivate it). Takes effect for {@link #currentHweight} at the next
     * {@link #commit}.
     */
    void propagate(CostGroup g, long active, long inuse) {
        if (!g.onActiveList && g.childActiveSum != 0) {
            inuse = MulDiv.ceil(active, g.childInuseSum, g.childActiveSum);
        } else {
            inuse = Math.min(Math.max(inuse, 1), active);
        }
        g.lastInuse = g.inuse;
        if (active == g.active && inuse == g.inuse) return;
        for (int lvl = g.level - 1; lvl >= 0; lvl--) {
            CostGroup parent = g.ancestors[lvl];
            CostGroup child = g.ancestors[lvl + 1];
            parent.childActiveSum += active - child.active;
            parent.childInuseSum += inuse - child.inuse;
            child.active = active;
            child.inuse = inuse;
            long parentActive = 0;
            long parentInuse = 0;
            if (parent.childActiveSum != 0) {
                parentActive = parent.weight;
                parentInuse = MulDiv.ceil(parentActive, parent.childInuseSum, parent.childActiveSum);
            }
            if (parentActive == parent.active && parentInuse == parent.inuse) break;
            active = parentActive;
            inuse = parentInuse;
        }
        updated = true;
    }

    /** Publishes the propagations since the last commit: hweights are recomputed lazily from now on. */
    void commit() {
        if (updated) {
            generation++;
            updated = false;
        }
    }

    /** Drops the group's cached hweight (on activation: a cache left from long ago could match a wrapped generation). */
    void invalidate(CostGroup g) {
        g.hweightGen = generation - 1;
    }

    /**
     * Brings the group's {@code hweightActive} and {@code hweightInuse} up to date: at each level
     * from the root down, the share of the level that the group's ancestor (or the group) has,
     * by active and by inuse weight; at least 1 each. Cached until the next commit that changed
     * something.
     */
    void currentHweight(CostGroup g) {
        if (g.hweightGen == generation) return;
        long hwa = WEIGHT_ONE;
        long hwi = WEIGHT_ONE;
        for (int lvl = 0; lvl < g.level; lvl++) {
            CostGroup parent = g.ancestors[lvl];
            CostGroup child = g.ancestors[lvl + 1];
            long activeSum = parent.childActiveSum;
            long inuseSum = parent.childInuseSum;
            if (activeSum == 0 || inuseSum == 0) continue;
            hwa = hwa * child.active / Math.max(child.active, activeSum);
            hwi = hwi * child.inuse / Math.max(child.inuse, inuseSum);
        }
        g.hweightActive = Math.max(hwa, 1);
        g.hweightInuse = Math.max(hwi, 1);
        g.hweightGen = generation;
    }

    /** The hweight_inuse the group would get with its inuse raised to its active weight, everything else unchanged. */
    long currentHweightMax(CostGroup g) {
        long hwm = WEIGHT_ONE;
        long inuse = g.active;
        for (int lvl = g.level - 1; lvl >= 0; lvl--) {
            CostGroup parent = g.ancestors[lvl];
            CostGroup child = g.ancestors[lvl + 1];
            long childInuseSum = parent.childInuseSum + inuse - child.inuse;
            hwm = hwm * inuse / Math.max(childInuseSum, 1);
            inuse = MulDiv.ceil(parent.active, childInuseSum, Math.max(parent.childActiveSum, 1));
        }
        return Math.max(hwm, 1);
    }

    /**
     * hweight_after_donation's formula: the hweight_inuse with which a group that spends
     * {@code usage} (of the whole device, × WEIGHT_ONE) over the next period ends it with
     * margin.target of budget again, having started it with {@code budget}. Spending usage must
     * use up the new period's budget (1 − target) plus what is left over (delta, the budget as
     * a fraction of the period): {@code usage = (1 − target + delta) × hwi}. Within [1, hwm].
     *
     * @param budget      the group's budget (vtime), at most the target
     * @param periodVtime the vtime the device clock advanced this period
     * @param hwm         the group's {@link #currentHweightMax}: returned when it should not donate
     */
    static long hweightAfterDonation(long usage, long budget, long periodVtime, long hwm) {
        long delta = WEIGHT_ONE * budget / periodVtime;
        long target = WEIGHT_ONE * MARGIN_TARGET_PCT / 100;
        long newHwi = WEIGHT_ONE * usage / (WEIGHT_ONE - target + delta);
        return Math.clamp(newHwi, 1, hwm);
    }

    /**
     * transfer_surpluses ("Andy's method"): works out the inuse weights with which every donor
     * ends at its {@code hweightAfterDonation} while every non-donor keeps its share relative to
     * the other non-donors. b = hweight_active of a subtree, t = its donors' part, t' = what
     * they keep; gamma = (1 − t'_root) / (1 − t_root) scales the non-donating parts up, and each
     * inner node's adjusted child sum (s') turns the shares back into weights level by level.
     * Afterwards, until the next transfer, {@link #inuseAfterDonation} gives each donor's
     * weight; the caller propagates it (or not, for a donor whose inuse it pins).
     *
     * @param donors groups with {@code hweightDonating} (their hweight_active) and
     *               {@code hweightAfterDonation} set, the latter below the former; someone else
     *               must be short of budget (not every group donates)
     */
    void transferSurpluses(List<CostGroup> donors) {
        // Keep the donors' after-donation sum below the whole, scaling down those above their hwa.
        long afterSum = 0;
        long overSum = 0;
        for (CostGroup g : donors) {
            currentHweight(g);
            afterSum += g.hweightAfterDonation;
            if (g.hweightAfterDonation > g.hweightActive) overSum += g.hweightAfterDonation;
        }
        long overTarget = overSum - (afterSum - (WEIGHT_ONE - 1));
        if (afterSum >= WEIGHT_ONE && overTarget > 0) {
            for (CostGroup g : donors) {
                if (g.hweightAfterDonation > g.hweightActive) g.hweightAfterDonation = g.hweightAfterDonation * overTarget / overSum;
            }
        }
        for (CostGroup g : donors) g.buildInnerWalk(innerWalk);
        CostGroup root = innerWalk.getFirst();
        for (CostGroup inner : innerWalk) {
            inner.childAdjustedSum = 0;
            inner.hweightDonating = 0;
            inner.hweightAfterDonation = 0;
        }
        // b_t and b'_t of every inner node: sums of its donors'.
        for (CostGroup g : donors) {
            CostGroup parent = g.parent();
            parent.hweightDonating += g.hweightDonating;
            parent.hweightAfterDonation += g.hweightAfterDonation;
        }
        for (int i = innerWalk.size() - 1; i >= 0; i--) {
            CostGroup inner = innerWalk.get(i);
            if (inner.level == 0) continue;
            CostGroup parent = inner.parent();
            parent.hweightDonating += inner.hweightDonating;
            parent.hweightAfterDonation += inner.hweightAfterDonation;
        }
        // b of the inner nodes, and the donation values kept in range after the round-ups.
        for (CostGroup inner : innerWalk) {
            if (inner.level > 0) {
                CostGroup parent = inner.parent();
                inner.hweightActive = MulDiv.ceil(parent.hweightActive, inner.active, Math.max(parent.childActiveSum, 1));
            }
            inner.hweightDonating = Math.min(inner.hweightDonating, inner.hweightActive);
            inner.hweightAfterDonation = Math.min(inner.hweightAfterDonation, inner.hweightDonating - 1);
        }
        long gamma = Math.ceilDiv((WEIGHT_ONE - root.hweightAfterDonation) * WEIGHT_ONE,
                WEIGHT_ONE - Math.min(root.hweightDonating, WEIGHT_ONE - 1));
        // Adjusted hweight_inuse (b'), inuse (w') and child sums (s') of the inner nodes, top-down.
        for (CostGroup inner : innerWalk) {
            if (inner.level == 0) {
                inner.childAdjustedSum = MulDiv.ceil(inner.childActiveSum, WEIGHT_ONE - inner.hweightDonating,
                        Math.max(WEIGHT_ONE - inner.hweightAfterDonation, 1));
                continue;
            }
            CostGroup parent = inner.parent();
            inner.hweightInuse = Math.ceilDiv(gamma * (inner.hweightActive - inner.hweightDonating), WEIGHT_ONE) + inner.hweightAfterDonation;
            long inuse = MulDiv.ceil(parent.childAdjustedSum, inner.hweightInuse, Math.max(parent.hweightInuse, 1));
            long st = MulDiv.ceil(inner.childActiveSum, inner.hweightDonating, Math.max(inner.hweightActive, 1));
            long sf = inner.childActiveSum - st;
            long wpt = MulDiv.ceil(inner.active, inner.hweightDonating, Math.max(inner.hweightActive, 1));
            long wptp = MulDiv.ceil(inuse, inner.hweightAfterDonation, Math.max(inner.hweightInuse, 1));
            inner.childAdjustedSum = sf + MulDiv.ceil(st, wptp, Math.max(wpt, 1));
        }
        for (CostGroup inner : innerWalk) inner.onWalk = false;
        innerWalk.clear();
    }

    /** After {@link #transferSurpluses}: the inuse weight that gives the donor its hweight_after_donation (w' = s'_parent × b' / b'_parent). */
    long inuseAfterDonation(CostGroup donor) {
        CostGroup parent = donor.parent();
        return MulDiv.ceil(parent.childAdjustedSum, donor.hweightAfterDonation, Math.max(parent.hweightInuse, 1));
    }
}
