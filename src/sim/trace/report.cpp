#include <algorithm>
#include <cmath>
#include <cstdio>

#include <hybridjob/sim/trace/report.h>

namespace hybridjob::sim::trace {
namespace {

std::string Format(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

// Colours of the policies in the plot, by Policy value.
constexpr const char* kColours[] = {"#d62728", "#7f7f7f", "#1f77b4",
                                    "#2ca02c", "#9467bd", "#ff7f0e"};

const char* ColourOf(Policy policy) {
  return kColours[static_cast<size_t>(policy) % std::size(kColours)];
}

// One chart: a frame, y ticks, and a step line per series.
struct Chart {
  double left = 70;
  double top = 0;
  double width = 820;
  double height = 220;
  double x_max = 1;
  double y_max = 1;

  double X(double x) const { return left + width * x / x_max; }
  double Y(double y) const { return top + height - height * std::min(y, y_max) / y_max; }
};

std::string Axes(const Chart& chart, const std::string& title, bool percent) {
  std::string svg;
  svg += "<text x=\"" + Format("%.0f", chart.left) + "\" y=\"" + Format("%.0f", chart.top - 8) +
         "\" font-size=\"14\">" + title + "</text>\n";
  svg += "<rect x=\"" + Format("%.1f", chart.left) + "\" y=\"" + Format("%.1f", chart.top) +
         "\" width=\"" + Format("%.1f", chart.width) + "\" height=\"" +
         Format("%.1f", chart.height) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  for (int tick = 0; tick <= 4; ++tick) {
    double value = chart.y_max * tick / 4;
    double y = chart.Y(value);
    svg += "<line x1=\"" + Format("%.1f", chart.left) + "\" x2=\"" +
           Format("%.1f", chart.left + chart.width) + "\" y1=\"" + Format("%.1f", y) + "\" y2=\"" +
           Format("%.1f", y) + "\" stroke=\"#ddd\"/>\n";
    std::string label = percent ? Format("%.0f%%", value * 100) : Format("%.0f", value);
    svg += "<text x=\"" + Format("%.1f", chart.left - 6) + "\" y=\"" + Format("%.1f", y + 4) +
           "\" font-size=\"11\" text-anchor=\"end\">" + label + "</text>\n";
  }
  for (int tick = 0; tick <= 5; ++tick) {
    double value = chart.x_max * tick / 5;
    double x = chart.X(value);
    svg += "<text x=\"" + Format("%.1f", x) + "\" y=\"" +
           Format("%.1f", chart.top + chart.height + 16) +
           "\" font-size=\"11\" text-anchor=\"middle\">" + Format("%.1f h", value / 3600) +
           "</text>\n";
  }
  return svg;
}

// A step line through the points, at most `buckets` of them: each bucket of
// time shows the mean of the values in it, weighted by how long each held.
template <typename ValueOf>
std::string StepLine(const Chart& chart, const ReplayResult& result, ValueOf value_of,
                     int buckets) {
  const std::vector<TimelinePoint>& timeline = result.timeline;
  if (timeline.empty()) {
    return "";
  }
  double end = std::max(result.end_time, timeline.back().time);
  double bucket = chart.x_max / buckets;
  std::vector<double> sums(static_cast<size_t>(buckets), 0);
  std::vector<double> spans(static_cast<size_t>(buckets), 0);
  for (size_t i = 0; i < timeline.size(); ++i) {
    double from = timeline[i].time;
    double to = i + 1 < timeline.size() ? timeline[i + 1].time : end;
    double value = value_of(timeline[i]);
    while (from < to) {
      size_t index = std::min(static_cast<size_t>(from / bucket), sums.size() - 1);
      double bucket_end = std::min(to, bucket * static_cast<double>(index + 1));
      if (bucket_end <= from) {
        bucket_end = to;
      }
      sums[index] += value * (bucket_end - from);
      spans[index] += bucket_end - from;
      from = bucket_end;
    }
  }
  std::string points;
  for (size_t i = 0; i < sums.size(); ++i) {
    if (spans[i] <= 0) {
      continue;
    }
    double y = chart.Y(sums[i] / spans[i]);
    points += Format("%.1f", chart.X(bucket * static_cast<double>(i))) + "," + Format("%.1f", y) +
              " " + Format("%.1f", chart.X(bucket * static_cast<double>(i + 1))) + "," +
              Format("%.1f", y) + " ";
  }
  return "<polyline fill=\"none\" stroke=\"" + std::string(ColourOf(result.policy)) +
         "\" stroke-width=\"1.3\" points=\"" + points + "\"/>\n";
}

}  // namespace

PolicySummary Summarize(const ReplayResult& result) {
  PolicySummary summary;
  summary.policy = std::string(PolicyName(result.policy));
  summary.jobs = static_cast<int64_t>(result.jobs.size());
  std::vector<double> jcts;
  double wait_total = 0;
  double first_wait_total = 0;
  double bound_total = 0;
  double lost_total = 0;
  int64_t started = 0;
  double first_submit = result.jobs.empty() ? 0 : result.jobs.front().submit;
  double last_finish = first_submit;
  int64_t gangs = 0;
  int64_t gangs_in_one_domain = 0;
  for (const JobRecord& job : result.jobs) {
    first_submit = std::min(first_submit, job.submit);
    wait_total += job.not_running_seconds;
    lost_total += job.lost_gpu_seconds;
    if (job.start >= 0) {
      first_wait_total += job.start - job.submit;
      ++started;
    }
    if (job.start >= 0 && job.start_members >= 2 && job.start_domains > 0) {
      ++gangs;
      gangs_in_one_domain += job.start_domains == 1 ? 1 : 0;
    }
    if (job.finished()) {
      bound_total += job.alone_jct_seconds;
      jcts.push_back(job.finish - job.submit);
      last_finish = std::max(last_finish, job.finish);
    }
  }
  summary.finished = static_cast<int64_t>(jcts.size());
  if (gangs > 0) {
    summary.one_domain_share =
        static_cast<double>(gangs_in_one_domain) / static_cast<double>(gangs);
  }
  if (!jcts.empty()) {
    double total = 0;
    for (double jct : jcts) {
      total += jct;
    }
    summary.avg_jct_seconds = total / static_cast<double>(jcts.size());
    summary.bound_avg_jct_seconds = bound_total / static_cast<double>(jcts.size());
    std::sort(jcts.begin(), jcts.end());
    size_t rank = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(jcts.size())));
    summary.p95_jct_seconds = jcts[std::max<size_t>(rank, 1) - 1];
  }
  if (!result.jobs.empty()) {
    summary.avg_wait_seconds = wait_total / static_cast<double>(result.jobs.size());
  }
  if (started > 0) {
    summary.avg_first_wait_seconds = first_wait_total / static_cast<double>(started);
  }
  summary.lost_gpu_hours = lost_total / 3600;
  summary.makespan_seconds = last_finish - first_submit;
  if (summary.makespan_seconds > 0 && result.cluster_gpus > 0) {
    summary.gpu_util = result.busy_gpu_seconds /
                       (static_cast<double>(result.cluster_gpus) * summary.makespan_seconds);
    summary.gpu_util = std::min(summary.gpu_util, 1.0);
  }
  if (result.waiting_seconds > 0 && result.cluster_gpus > 0) {
    summary.gpu_util_while_waiting =
        result.busy_gpu_seconds_while_waiting /
        (static_cast<double>(result.cluster_gpus) * result.waiting_seconds);
    summary.idle_gpu_hours_while_waiting =
        (static_cast<double>(result.cluster_gpus) * result.waiting_seconds -
         result.busy_gpu_seconds_while_waiting) /
        3600;
    summary.fragmentation = result.fragmented_gpu_seconds /
                            (static_cast<double>(result.cluster_gpus) * result.waiting_seconds);
  }
  summary.fragmented_gpu_hours = result.fragmented_gpu_seconds / 3600;
  summary.partial_gang_gpu_hours = result.partial_gpu_seconds / 3600;
  if (result.planning_wall_seconds > 0) {
    summary.decisions_per_second =
        static_cast<double>(result.decisions) / result.planning_wall_seconds;
  }
  double distance = 0;
  int64_t leaves = 0;
  for (const QueueRecord& queue : result.queues) {
    if (queue.leaf && queue.seconds_with_work_waiting > 0) {
      distance += queue.ShareDistanceGpus();
      ++leaves;
    }
  }
  summary.share_distance_gpus = leaves > 0 ? distance / static_cast<double>(leaves) : 0;
  summary.cycles = result.cycles;
  summary.evictions = result.evictions;
  summary.stuck_jobs = result.stuck_jobs;
  summary.planning_wall_seconds = result.planning_wall_seconds;
  return summary;
}

std::string SummaryCsv(const std::vector<PolicySummary>& summaries) {
  std::string out =
      "policy,jobs,finished,avg_jct_s,p95_jct_s,avg_wait_s,makespan_s,gpu_util,"
      "partial_gang_gpu_hours,decisions_per_s,one_domain_share,fragmented_gpu_hours,"
      "fragmentation,share_distance_gpus,avg_first_wait_s,lost_gpu_hours,bound_avg_jct_s\n";
  for (const PolicySummary& s : summaries) {
    out += s.policy + "," + std::to_string(s.jobs) + "," + std::to_string(s.finished) + "," +
           Format("%.1f", s.avg_jct_seconds) + "," + Format("%.1f", s.p95_jct_seconds) + "," +
           Format("%.1f", s.avg_wait_seconds) + "," + Format("%.1f", s.makespan_seconds) + "," +
           Format("%.4f", s.gpu_util) + "," + Format("%.2f", s.partial_gang_gpu_hours) + "," +
           Format("%.0f", s.decisions_per_second) + "," +
           (s.one_domain_share < 0 ? "" : Format("%.4f", s.one_domain_share)) + "," +
           Format("%.2f", s.fragmented_gpu_hours) + "," + Format("%.4f", s.fragmentation) + "," +
           Format("%.2f", s.share_distance_gpus) + "," + Format("%.1f", s.avg_first_wait_seconds) +
           "," + Format("%.2f", s.lost_gpu_hours) + "," + Format("%.1f", s.bound_avg_jct_seconds) +
           "\n";
  }
  return out;
}

std::string SummaryTable(const std::vector<PolicySummary>& summaries) {
  char line[512];
  std::string out;
  std::snprintf(line, sizeof(line),
                "%-16s %6s %8s %10s %10s %10s %11s %11s %6s %10s %12s %10s %8s %10s %9s %8s %8s "
                "%8s %9s %6s %10s\n",
                "policy", "jobs", "finished", "avg_jct_h", "p95_jct_h", "avg_wait_h",
                "first_wait_h", "makespan_h", "util", "util_wait", "idle_wait_gh", "partial_gh",
                "lost_gh", "dec/s", "evictions", "plan_s", "replay_s", "one_dom", "frag_gh", "frag",
                "share_dist");
  out += line;
  for (const PolicySummary& s : summaries) {
    std::snprintf(
        line, sizeof(line),
        "%-16s %6lld %8lld %10.2f %10.2f %10.2f %11.2f %11.2f %6.3f %10.3f %12.1f %10.1f %8.1f "
        "%10.0f %9lld %8.2f %8.2f %8s %9.1f %6.3f %10.2f\n",
        s.policy.c_str(), static_cast<long long>(s.jobs), static_cast<long long>(s.finished),
        s.avg_jct_seconds / 3600, s.p95_jct_seconds / 3600, s.avg_wait_seconds / 3600,
        s.avg_first_wait_seconds / 3600, s.makespan_seconds / 3600, s.gpu_util,
        s.gpu_util_while_waiting, s.idle_gpu_hours_while_waiting, s.partial_gang_gpu_hours,
        s.lost_gpu_hours, s.decisions_per_second,
        static_cast<long long>(s.evictions), s.planning_wall_seconds, s.replay_wall_seconds,
        s.one_domain_share < 0 ? "-" : Format("%.3f", s.one_domain_share).c_str(),
        s.fragmented_gpu_hours, s.fragmentation, s.share_distance_gpus);
    out += line;
  }
  if (!summaries.empty() && summaries.front().bound_avg_jct_seconds > 0) {
    out += "bound: avg JCT " + Format("%.2f", summaries.front().bound_avg_jct_seconds / 3600) +
           " h with every job alone at its maximum from its submit\n";
  }
  return out;
}

std::string JobsCsv(const std::vector<ReplayResult>& results) {
  std::string out =
      "policy,job,queue,min_gpus,max_gpus,submit_s,start_s,finish_s,wait_s,jct_s,mean_gpus,"
      "resizes,evicted_members,partial_gpu_s,first_wait_s,preemptions,restarts,lost_gpu_s\n";
  for (const ReplayResult& result : results) {
    std::string policy(PolicyName(result.policy));
    for (const JobRecord& job : result.jobs) {
      out += policy + "," + job.id + "," + job.queue + "," + std::to_string(job.min_gpus) + "," +
             std::to_string(job.max_gpus) + "," + Format("%.3f", job.submit) + ",";
      out += job.start >= 0 ? Format("%.3f", job.start) : "";
      out += ",";
      out += job.finished() ? Format("%.3f", job.finish) : "";
      out += ",";
      out += Format("%.3f", job.not_running_seconds);
      out += ",";
      out += job.finished() ? Format("%.3f", job.finish - job.submit) : "";
      out += "," + Format("%.2f", job.mean_gpus_running) + "," + std::to_string(job.resizes) + "," +
             std::to_string(job.evicted_members) + "," + Format("%.1f", job.partial_gpu_seconds) +
             ",";
      out += job.start >= 0 ? Format("%.3f", job.start - job.submit) : "";
      out += "," + std::to_string(job.preemptions) + "," + std::to_string(job.restarts) + "," +
             Format("%.1f", job.lost_gpu_seconds) + "\n";
    }
  }
  return out;
}

std::string QueuesCsv(const std::vector<ReplayResult>& results) {
  std::string out =
      "policy,queue,parent,leaf,jobs,started,finished,avg_wait_s,avg_jct_s,gpu_hours,"
      "partial_gpu_hours,evicted_members,share_distance_gpus,avg_first_wait_s,lost_gpu_hours\n";
  for (const ReplayResult& result : results) {
    std::string policy(PolicyName(result.policy));
    for (const QueueRecord& queue : result.queues) {
      out += policy + "," + queue.name + "," + queue.parent + "," +
             (queue.leaf ? "true" : "false") + "," + std::to_string(queue.jobs) + "," +
             std::to_string(queue.started) + "," + std::to_string(queue.finished) + ",";
      out += queue.jobs > 0 ? Format("%.3f", queue.wait_seconds / static_cast<double>(queue.jobs))
                            : "";
      out += ",";
      out += queue.finished > 0
                 ? Format("%.3f", queue.jct_seconds / static_cast<double>(queue.finished))
                 : "";
      out += "," + Format("%.3f", queue.gpu_seconds_held / 3600) + "," +
             Format("%.3f", queue.partial_gpu_seconds / 3600) + "," +
             std::to_string(queue.evicted_members) + ",";
      out += queue.seconds_with_work_waiting > 0 ? Format("%.3f", queue.ShareDistanceGpus()) : "";
      out += ",";
      out += queue.started > 0
                 ? Format("%.3f", queue.first_wait_seconds / static_cast<double>(queue.started))
                 : "";
      out += "," + Format("%.3f", queue.lost_gpu_seconds / 3600) + "\n";
    }
  }
  return out;
}

std::string TimelineSvg(const std::vector<ReplayResult>& results) {
  double x_max = 1;
  double y_queue = 1;
  for (const ReplayResult& result : results) {
    x_max = std::max(x_max, result.end_time);
    for (const TimelinePoint& point : result.timeline) {
      y_queue = std::max(y_queue, static_cast<double>(point.waiting_jobs));
    }
  }
  Chart utilisation;
  utilisation.top = 40;
  utilisation.x_max = x_max;
  utilisation.y_max = 1;
  Chart queue = utilisation;
  queue.top = utilisation.top + utilisation.height + 60;
  queue.y_max = y_queue;
  double total_height = queue.top + queue.height + 70;
  constexpr int kBuckets = 400;

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"920\" height=\"" +
                    Format("%.0f", total_height) +
                    "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" "
                    "fill=\"white\"/>\n";
  svg += Axes(utilisation, "GPU utilisation (GPUs of running jobs / cluster GPUs)", true);
  svg += Axes(queue, "Queue length (jobs waiting to start)", false);
  for (const ReplayResult& result : results) {
    double gpus = std::max<double>(1, static_cast<double>(result.cluster_gpus));
    svg += StepLine(
        utilisation, result,
        [gpus](const TimelinePoint& p) { return static_cast<double>(p.busy_gpus) / gpus; },
        kBuckets);
    svg += StepLine(
        queue, result, [](const TimelinePoint& p) { return static_cast<double>(p.waiting_jobs); },
        kBuckets);
  }
  double legend_y = queue.top + queue.height + 45;
  double legend_x = queue.left;
  for (const ReplayResult& result : results) {
    svg += "<rect x=\"" + Format("%.0f", legend_x) + "\" y=\"" + Format("%.0f", legend_y - 10) +
           "\" width=\"14\" height=\"4\" fill=\"" + ColourOf(result.policy) + "\"/>\n";
    svg += "<text x=\"" + Format("%.0f", legend_x + 20) + "\" y=\"" + Format("%.0f", legend_y) +
           "\" font-size=\"12\">" + std::string(PolicyName(result.policy)) + "</text>\n";
    legend_x += 160;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace hybridjob::sim::trace
