package io.iotarget.iocontrol.policy.cost;

import org.junit.jupiter.api.Test;

import java.util.List;

import static io.iotarget.iocontrol.policy.cost.CostTunables.VTIME_PER_USEC;
import static io.iotarget.iocontrol.policy.cost.CostTunables.WEIGHT_ONE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The weight arithmetic on its own, on trees of bare nodes: the package documentation's worked
 * numbers (sections 2 and 7), then cases worked out from the kernel's rules with its rounding.
 * W = WEIGHT_ONE = 65536 is the whole device.
 */
class HierarchicalWeightsTest {
    private static final long W = WEIGHT_ONE;
    /** The default QoS period (50 ms) in vtime at vrate 100%, and margin.target (half of it). */
    private static final long PERIOD_VTIME = 50_000 * VTIME_PER_USEC;
    private static final long TARGET_VTIME = 25_000 * VTIME_PER_USEC;

    private final HierarchicalWeights weights = new HierarchicalWeights();
    private final CostGroup root = node(null, 100);

    /** A node with io.weight {@code weight}; the arithmetic needs no device group. */
    private static CostGroup node(CostGroup parent, long weight) {
        return new CostGroup(null, parent, weight * W);
    }

    /** What CostDevice.activate does to the weights of a group issuing for the first time. */
    private void activate(CostGroup... leaves) {
        for (CostGroup g : leaves) {
            weights.invalidate(g);
            g.onActiveList = true;
            weights.propagate(g, g.weight, g.weight);
        }
        weights.commit();
    }

    private long hwa(CostGroup g) {
        weights.currentHweight(g);
        return g.hweightActive;
    }

    private long hwi(CostGroup g) {
        weights.currentHweight(g);
        return g.hweightInuse;
    }

    /** A donor at a period end, as PeriodLoop marks it, then Andy's method and the donors' new inuse. */
    private void donate(CostGroup donor, long hweightAfterDonation) {
        donor.hweightDonating = hwa(donor);
        donor.hweightAfterDonation = hweightAfterDonation;
        weights.transferSurpluses(List.of(donor));
        weights.propagate(donor, donor.active, weights.inuseAfterDonation(donor));
        weights.commit();
    }

    @Test
    void shouldSplitTheDeviceByWeightAtEveryLevel() {
        // Section 2: root ─┬─ x (100) ─┬─ x1 (100)    x1: 100/300 × 100/400 = 1/12
        //                  │           └─ x2 (300)    x2: 100/300 × 300/400 = 1/4
        //                  └─ y (200)                 y:  200/300           = 2/3
        CostGroup x = node(root, 100);
        CostGroup x1 = node(x, 100);
        CostGroup x2 = node(x, 300);
        CostGroup y = node(root, 200);
        activate(x1, x2, y);
        // Each level floors: x has ⌊W·100/300⌋ = 21845, of which x1 ⌊21845/4⌋ and x2 ⌊21845·3/4⌋.
        assertEquals(5461, hwa(x1));
        assertEquals(16383, hwa(x2));
        assertEquals(43690, hwa(y));
        assertEquals(5461, hwi(x1), "nobody donates: inuse shares are the active ones");
        // The inner node took its configured weight when its first child activated, and the root's sums hold both levels' nodes.
        assertEquals(100 * W, x.active);
        assertEquals(400 * W, x.childActiveSum);
        assertEquals(300 * W, root.childActiveSum);
    }

    @Test
    void shouldChargeTheWorkedExampleAtItsShare() {
        // Section 7: a (100) and b (200) active: a's hweight is ⌊65536·100/300⌋ = 21845, and a
        // sequential 4 KiB write (2^21 vtime) costs it ⌈2^21·65536/21845⌉ = 6291553.
        CostGroup a = node(root, 100);
        CostGroup b = node(root, 200);
        activate(a, b);
        assertEquals(21845, hwi(a));
        assertEquals(43690, hwi(b));
        assertEquals(6_291_553, Math.ceilDiv((1L << 21) * W, hwi(a)));
    }

    @Test
    void shouldRecomputeSharesOnlyOnceTheChangeIsCommitted() {
        CostGroup a = node(root, 100);
        CostGroup b = node(root, 300);
        activate(a, b);
        assertEquals(16384, hwi(a));
        // b leaves the tree: the sums change at once, the cached shares at the commit.
        weights.propagate(b, 0, 0);
        assertEquals(0, b.active);
        assertEquals(100 * W, root.childActiveSum);
        assertEquals(16384, hwi(a), "not committed yet: the cache still holds");
        weights.commit();
        assertEquals(W, hwi(a), "a alone");
    }

    @Test
    void shouldFindTheDonationOfTheWorkedExample() {
        // Section 7, donation: b used 3200/65536 of the device this period (usage 3200) and its
        // budget was trimmed to the target, half a period: delta = 1/2, so it keeps
        // 3200 / (1 − 1/2 + 1/2) = 3200.
        assertEquals(3200, HierarchicalWeights.hweightAfterDonation(3200, TARGET_VTIME, PERIOD_VTIME, W / 2));
        // Less left over (a tenth of a period) needs a larger share to end at the target again:
        // ⌊65536·3200 / (65536 − 32768 + 6553)⌋, delta = ⌊65536 / 10⌋.
        assertEquals(5333, HierarchicalWeights.hweightAfterDonation(3200, PERIOD_VTIME / 10, PERIOD_VTIME, W / 2));
        // Never above what it would get undonated (hwm), never below 1.
        assertEquals(W / 2, HierarchicalWeights.hweightAfterDonation(W, TARGET_VTIME, PERIOD_VTIME, W / 2));
        assertEquals(1, HierarchicalWeights.hweightAfterDonation(0, TARGET_VTIME, PERIOD_VTIME, W / 2));
    }

    @Test
    void shouldTransferTheWorkedExamplesSurplus() {
        // Section 7: a (100) floods, b (100) keeps 3200 of its 32768.
        CostGroup a = node(root, 100);
        CostGroup b = node(root, 100);
        activate(a, b);
        assertEquals(W / 2, weights.currentHweightMax(b));
        donate(b, 3200);
        // The root's adjusted child sum ⌈200·65536 · (65536 − 32768) / (65536 − 3200)⌉ = 6890028,
        // and b's inuse ⌈6890028 · 3200 / 65536⌉ = 336428 (5.13 against a's 100).
        assertEquals(6_890_028, root.childAdjustedSum);
        assertEquals(336_428, b.inuse);
        assertEquals(100 * W, b.active, "donating lowers inuse only");
        assertEquals(100 * W, a.inuse);
        assertEquals(3200, hwi(b));
        // gamma = ⌈(65536 − 3200)·65536 / (65536 − 32768)⌉ = 124672 scales the non-donor up:
        // a's 32768 becomes 32768 · 124672 / 65536 = 62336, 62335 after the floors.
        assertEquals(62_335, hwi(a));
        assertEquals(W / 2, hwa(a), "its active share is unchanged");
        // Raising b's inuse back to active would give it its half again.
        assertEquals(W / 2, weights.currentHweightMax(b));
    }

    @Test
    void shouldKeepTheNonDonorsProportionsWhenADonorIsNested() {
        // The tree of section 2; x1 (hwa 5461) keeps 1000. t_root = 5461, t'_root = 1000, so
        // gamma = ⌈(65536 − 1000)·65536 / (65536 − 5461)⌉ = 70403, and the non-donors should
        // grow to 16383 · 70403/65536 = 17599.7 and 43690 · 70403/65536 = 46934.6.
        CostGroup x = node(root, 100);
        CostGroup x1 = node(x, 100);
        CostGroup x2 = node(x, 300);
        CostGroup y = node(root, 200);
        activate(x1, x2, y);
        donate(x1, 1000);
        // Worked through Andy's method with the kernel's rounding:
        //   root: s' = ⌈300·W · (W − 5461) / (W − 1000)⌉ = 18301763
        //   x:    b = ⌈W · 100/300⌉ = 21846, b' = ⌈70403 · (21846 − 5461) / W⌉ + 1000 = 18602,
        //         w' = ⌈18301763 · 18602 / W⌉ = 5194846,
        //         s_t = ⌈400·W · 5461 / 21846⌉ = 6553001, s_f = 19661399,
        //         w_pt = ⌈100·W · 5461 / 21846⌉ = 1638251, w'_pt = ⌈5194846 · 1000 / 18602⌉ = 279263,
        //         s' = 19661399 + ⌈6553001 · 279263 / 1638251⌉ = 20778451
        //   x1:   inuse = ⌈20778451 · 1000 / 18602⌉ = 1117001
        assertEquals(18_301_763, root.childAdjustedSum);
        assertEquals(20_778_451, x.childAdjustedSum);
        assertEquals(1_117_001, x1.inuse);
        // x's inuse follows its children's: ⌈100·W · (1117001 + 300·W) / (400·W)⌉.
        assertEquals(5_194_451, x.inuse);
        assertEquals(999, hwi(x1), "the donor keeps what it asked for, less a floor");
        assertEquals(17_600, hwi(x2));
        assertEquals(46_935, hwi(y));
        assertEquals(16383.0 / 43690, (double) hwi(x2) / hwi(y), 1e-4, "x2 : y as before the donation");
        assertTrue(W - (hwi(x1) + hwi(x2) + hwi(y)) <= 2, "the shares still add up to the device, less the floors");
    }

    @Test
    void shouldLetAnInnerNodeUseWhatItsChildrenUse() {
        // An inner node's inuse is its weight times its children's inuse/active ratio: x1 at half
        // its weight gives x ⌈100·W · 350/400⌉, and y's share grows accordingly.
        CostGroup x = node(root, 100);
        CostGroup x1 = node(x, 100);
        CostGroup x2 = node(x, 300);
        CostGroup y = node(root, 200);
        activate(x1, x2, y);
        weights.propagate(x1, x1.active, 50 * W);
        weights.commit();
        assertEquals(5_734_400, x.inuse);
        assertEquals(100 * W, x.active);
        // y: ⌊W · 200 / 287.5⌋; x2: ⌊⌊W · 87.5 / 287.5⌋ · 300 / 350⌋ = ⌊19945 · 300 / 350⌋.
        assertEquals(45_590, hwi(y));
        assertEquals(17_095, hwi(x2));
        assertEquals(16383, hwa(x2), "active shares do not move");
    }

    @Test
    void shouldGiveADebtorsShareToItsSiblings() {
        // In debt a group donates everything: inuse 0 is kept at the minimum of 1.
        CostGroup a = node(root, 100);
        CostGroup b = node(root, 100);
        activate(a, b);
        weights.propagate(a, a.active, 0);
        weights.commit();
        assertEquals(1, a.inuse);
        assertEquals(100 * W, a.lastInuse, "restored when the debt is paid");
        assertEquals(1, hwi(a), "⌊W / (100·W + 1)⌋ = 0, kept at 1");
        assertEquals(65_535, hwi(b));
        weights.propagate(a, a.active, a.lastInuse);
        weights.commit();
        assertEquals(W / 2, hwi(a));
    }

    @Test
    void shouldDeactivateAnInnerNodeWithItsLastChild() {
        CostGroup x = node(root, 100);
        CostGroup x1 = node(x, 100);
        CostGroup x2 = node(x, 300);
        CostGroup y = node(root, 200);
        activate(x1, x2, y);
        for (CostGroup leaf : List.of(x1, x2)) {
            weights.propagate(leaf, 0, 0);
            leaf.onActiveList = false;
        }
        weights.commit();
        assertEquals(0, x.active, "no active child: x left the tree too");
        assertEquals(0, x.inuse);
        assertEquals(200 * W, root.childActiveSum);
        assertEquals(W, hwa(y));
        assertEquals(W, hwi(y));
    }
}
