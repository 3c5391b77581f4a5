// Utilisation over time from what the nodes recorded: each tenancy (an instance a job held, from
// the ledger's history or still running) spread over equal time buckets, per node as the share of
// its compute slices held by jobs and per profile as the mean number of instances held.
// Pure: `vgpuctl report` reads the files and draws; tests feed it tenancies.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vgpuctl {

struct Tenancy {
  std::string node;
  std::string profile;
  int compute_slices = 0;
  std::int64_t start = 0;  // Unix seconds
  std::int64_t end = 0;    // still running: the report's end
};

struct UsageReport {
  std::int64_t since = 0, until = 0, bucket_seconds = 0;
  std::vector<std::int64_t> bucket_starts;
  std::map<std::string, std::vector<double>> node_utilisation;   // 0..1 per bucket
  std::map<std::string, std::vector<double>> profile_instances;  // mean instances held per bucket
  std::map<std::string, double> node_mean;                       // over the whole window
  std::map<std::string, double> profile_instance_hours;
};

// `capacity`: compute slices per node (every GPU's). A node without capacity is left out.
UsageReport build_usage_report(const std::vector<Tenancy>& tenancies, const std::map<std::string, int>& capacity,
                               std::int64_t since, std::int64_t until, int buckets);

}  // namespace vgpuctl
