// The sentence a report states about a head. Every clause comes from a number, and a
// label ("reads the name", "needed for who-answers") only when the number clears its bar:
//   a reading pattern is named when it holds at least kPatternShare of the head's attention;
//   a head "reads" an answer kind when at least kSourceShare of its attention at the answer
//   falls on the answer's place in the story (span_share), and at least twice as much as
//   for the other kinds;
//   a head is "needed" for a kind when replacing it by its mean output (or, without a
//   validation text, zeroing it) costs at least kNeededPoints of that kind's accuracy.
#include <cstdio>

#include "tinyformer/inspect/inspect.hpp"
#include "tinyformer/support/plot.hpp"

namespace tinyformer {

namespace {

constexpr double kPatternShare = 0.4;
constexpr double kSourceShare = 0.3;
constexpr double kNeededPoints = 10.0;

// What an answer kind's answer is, in words.
std::string answer_of(const std::string& kind) {
    if (kind == "who") return "the name";
    if (kind == "colour") return "the colour";
    return "the " + kind + " answer";
}

}  // namespace

std::string answer_kind_read(const std::map<std::string, double>& span_share_by_kind) {
    for (const auto& [kind, share] : span_share_by_kind) {
        bool dominant = share >= kSourceShare;
        for (const auto& [other, other_share] : span_share_by_kind)
            if (other != kind && share < 2 * other_share) dominant = false;
        if (dominant) return kind;
    }
    return "";
}

std::string describe_head(const HeadReport& head, const InspectResult& result) {
    std::string s = "L" + std::to_string(head.layer) + "H" + std::to_string(head.head);
    // 1. Where it reads on ordinary text.
    if (result.has_text) {
        const HeadRoles& r = head.roles;
        const std::pair<double, const char*> patterns[] = {
            {r.previous, "the character just before the query"},
            {r.self, "the query's own position"},
            {r.first, "the window's first character"},
            {r.duplicate, "earlier copies of the query's character"},
            {r.induction, "the character after an earlier copy of the query's character"}};
        const auto* best = &patterns[0];
        for (const auto& p : patterns)
            if (p.first > best->first) best = &p;
        if (best->first >= kPatternShare)
            s += " puts " + fixed(best->first) + " of its attention on " + best->second;
        else
            s += " follows no single pattern (the largest, " + std::string(best->second) + ", holds " +
                 fixed(best->first) + ")";
        s += ", reading " + fixed(r.distance, 1) + " characters back on average";
    } else {
        s += " (no validation text: no reading patterns)";
    }
    // 2. Whether it reads the answers where the story states them.
    if (result.has_probes && !head.answer_source.empty()) {
        std::string spans, shares, reads;
        std::map<std::string, double> span_shares;
        for (const auto& [kind, source] : head.answer_source) {
            spans += (spans.empty() ? "" : ", ") + kind + " " + fixed(source.span_share);
            shares += (shares.empty() ? "" : ", ") + kind + " " + fixed(source.share);
            span_shares[kind] = source.span_share;
        }
        const std::string kind_read = answer_kind_read(span_shares);
        if (!kind_read.empty()) reads = answer_of(kind_read);
        s += "; at the answer, " +
             (reads.empty() ? std::string("it reads no answer more than another") : "it reads " + reads) +
             " (attention on the answer's place in the story: " + spans + "; on the answer's own characters: " +
             shares + ")";
    }
    // 3. What the model loses without it.
    if (result.has_probes || result.has_text) {
        const AblationResult& costly = result.has_text ? head.mean_replaced : head.zeroed;
        std::string effects, needed;
        for (const auto& [kind, counts] : result.probes.by_kind) {
            const double before = result.probes.accuracy(kind), zeroed = head.zeroed.probes.accuracy(kind);
            effects += (effects.empty() ? "" : ", ") + kind + " " + percent(before) + " → " + percent(zeroed);
            if (result.has_text) effects += " (mean: " + percent(head.mean_replaced.probes.accuracy(kind)) + ")";
            if (100 * (before - costly.probes.accuracy(kind)) >= kNeededPoints)
                needed += (needed.empty() ? "" : " and ") + kind;
        }
        std::string loss;
        if (result.has_text)
            loss = "validation loss " + fixed(result.val_loss, 3) + " → " + fixed(head.zeroed.val_loss, 3) +
                   " (mean: " + fixed(head.mean_replaced.val_loss, 3) + ")";
        s += "; zeroed: " + effects + (effects.empty() || loss.empty() ? "" : ", ") + loss;
        if (result.has_probes)
            s += needed.empty() ? "; no answer kind needs it" : "; the " + needed + " answers need it";
    }
    return s + ".";
}

}  // namespace tinyformer
