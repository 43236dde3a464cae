/**
 * stress-tests: the lock-free pieces of iotarget proven with jcstress, not argued in comments.
 *
 * <h2>1. What is proven</h2>
 * Each test sits in the package of the class it drives (they are package-private), runs that
 * class's own code on two threads at once, and lists every outcome it allows with the reason,
 * and the outcomes it forbids with the bug each would be; any outcome not listed is forbidden.
 * <pre>
 *   piece                               who races                               tests
 *   SlotQueue (NVMe/TCP responses)      completions' pushes; loop's poll        SlotQueueProducersStress, SlotQueuePollStress
 *     and its flush flag                completion's arm vs the flush task      SlotQueueFlushStress
 *   FinishedCommands (NBD replies)      engine threads' pushes; loop's drain    FinishedCommandsPushStress
 *     and its flush flag                completion's arm vs the flush task      FinishedCommandsFlushStress
 *   EventLoop.execute's wake-up         producer vs the loop's task drain       EventLoopWakeupStress (a real Selector)
 *   Releaser's wake-up                  a held completion's releaseBy vs the    ReleaserWakeupStress
 *                                       releaser publishing its next wake
 *   StatStripe's publish/flush pair     an add to a queued stripe vs a flush    StatStripeRequeueStress
 *     and its queued flag               two adds to one unqueued stripe         StatStripeWritersStress
 *   StatFlusher's updated list          a first push vs the flush's take        StatFlusherPushStress
 *   DeviceStats                         two IO threads, group and parent        DeviceStatsWritersStress
 * </pre>
 * Not here, because nothing about them is lock-free any more: NVMe/TCP's free tags (FreeTags, a
 * single-producer ring between the reader and writer threads, went when queues moved onto the
 * event loops: tags are now a plain array of the loop's) and NBD's free-command stack (the
 * loop's own, a plain field). The rest of the server shares state through locks, queues of the
 * JDK, or hand-offs to the loop.
 *
 * <h2>2. Wake-ups are store-buffering pairs</h2>
 * The four wake-ups (the two flush flags, the loop's, the releaser's) and StatStripe's queued
 * flag share one shape: a producer publishes work, then reads a flag ("is a wake-up pending?",
 * "is the stripe queued?"); the consumer lowers the flag, then looks for work. The Java memory
 * model makes one side see the other's write only if all four accesses are synchronization
 * actions, which it orders totally (volatile accesses; the releaser's held completions are read
 * under their monitor); with release/acquire both sides may miss, which is the lost wake-up. A
 * test of such a pair arranges the race and then plays the next wake-up in its arbiter: the
 * forbidden outcome is "the consumer missed the work and nobody was woken".
 *
 * <h2>3. What a pass means, and what it cannot show</h2>
 * jcstress runs every test in each JVM configuration it knows (interpreter, C1, C2, split
 * compilation, C2 with randomized scheduling), in forked JVMs, millions of times. A pass on
 * x86 cannot show a reordering x86 never does (release/acquire where a synchronization action
 * is needed is invisible there, hence §2 is argued from the JMM, as SlotQueue's notes do); on
 * AArch64 the same tests could. A forbidden outcome, once seen, is a real race: fix it, and the test that
 * showed it stays as its regression test.
 *
 * <h2>4. Running</h2>
 * {@code scripts/stress} (sanity preset, about a minute on two cores; {@code scripts/test} runs
 * it and adds its tests to the pass/fail count); {@code bench/stress --mode tough} for hours.
 * The log and an HTML report land in {@code stress-tests/target/}.
 *
 * <h2>5. Adding a test</h2>
 * One race per test, small state (jcstress makes millions), the production methods called as
 * their real callers call them; where a piece must be split to be driven (a flag moved next to
 * its queue, a wait decision returned instead of parked on), the split keeps the IO path's
 * behaviour and cost, and the commit says so.
 */
package io.iotarget.stress;
