package io.iotarget.iocontrol.policy.cost;

import static io.iotarget.iocontrol.policy.cost.CostTunables.VRATE_MAX_PPM;
import static io.iotarget.iocontrol.policy.cost.CostTunables.VRATE_MIN_PPM;

/**
 * The kernel's built-in parameter sets ("autop"), used while io.cost.qos / io.cost.model say
 * {@code ctrl=auto}. The kernel picks HDD for rotational queues and SSD_QD1 for queue depth 1;
 * iotarget's devices report neither, so they start on SSD_DFL, the kernel's default for
 * non-rotational devices, and step to SSD_FAST and back exactly as the kernel does: when vrate
 * stays at or above {@link #tooFastVratePct} (or at or below {@link #tooSlowVratePct}) for
 * {@link CostTunables#AUTOP_CYCLE_NS} while nothing is user-configured.
 */
enum AutoParams {
    SSD_DFL(new QosParams(0, 25_000, 0, 25_000, VRATE_MIN_PPM, VRATE_MAX_PPM),
            new LinearModel(488_636_629L, 8_932, 8_518, 427_891_549L, 28_755, 21_940), 500, 0),
    SSD_FAST(new QosParams(0, 5_000, 0, 5_000, VRATE_MIN_PPM, VRATE_MAX_PPM),
            new LinearModel(3_102_524_156L, 724_816, 778_122, 1_742_780_862L, 425_702, 443_193), 0, 10);

    final QosParams qos;
    final LinearModel model;
    /** Step up to the next set when vrate stays at or above this %; 0 = never. */
    final long tooFastVratePct;
    /** Step down to the previous set when vrate stays at or below this %; 0 = never. */
    final long tooSlowVratePct;

    AutoParams(QosParams qos, LinearModel model, long tooFastVratePct, long tooSlowVratePct) {
        this.qos = qos;
        this.model = model;
        this.tooFastVratePct = tooFastVratePct;
        this.tooSlowVratePct = tooSlowVratePct;
    }

    AutoParams next() {
        return values()[ordinal() + 1];
    }

    AutoParams previous() {
        return values()[ordinal() - 1];
    }
}
