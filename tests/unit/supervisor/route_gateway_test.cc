// The route gateway's event line (src/supervisor/route_gateway.h): what the relay writes is what the
// supervisor reads back into the route_request record, a line of the wrong types reads as absent rather
// than throwing, and long text is cut so that the line stays one atomic write.
#include "supervisor/route_gateway.h"

#include <gtest/gtest.h>

namespace tnk::supervisor {
namespace {

TEST(RouteEvent, RoundTripsThroughTheEventLine) {
  RouteEvent event;
  event.route = "github";
  event.method = "POST";
  event.path = "/me/repo.git/git-receive-pack";
  event.upstream = "github.com:443";
  event.allowed = true;
  event.status = 200;
  event.reason = "closed";
  event.bytes_up = 402;
  event.bytes_down = 1187;
  event.latency_ms = 212;
  nlohmann::json line = to_json(event);
  EXPECT_EQ(line["event"], "route_request");
  RouteEvent back = route_event_from_json(line);
  EXPECT_EQ(back.route, event.route);
  EXPECT_EQ(back.method, event.method);
  EXPECT_EQ(back.path, event.path);
  EXPECT_EQ(back.upstream, event.upstream);
  EXPECT_TRUE(back.allowed);
  EXPECT_EQ(back.status, 200);
  EXPECT_EQ(back.reason, "closed");
  EXPECT_EQ(back.bytes_up, 402u);
  EXPECT_EQ(back.bytes_down, 1187u);
  EXPECT_EQ(back.latency_ms, 212);
}

TEST(RouteEvent, FieldsOfTheWrongTypeReadAsAbsent) {
  nlohmann::json line = {{"event", "route_request"}, {"route", 7},     {"allowed", "yes"},
                         {"status", "200"},          {"bytes_up", -5}, {"path", nullptr}};
  RouteEvent event;
  EXPECT_NO_THROW(event = route_event_from_json(line));
  EXPECT_EQ(event.route, "");
  EXPECT_FALSE(event.allowed);
  EXPECT_EQ(event.status, 0);
  EXPECT_EQ(event.bytes_up, 0u);
}

TEST(RouteEvent, LongTextIsCutAndTheLineFitsOneWrite) {
  RouteEvent event;
  event.route.assign(5000, 'r');
  event.path = "/" + std::string(5000, 'p');
  event.reason.assign(5000, 'x');
  std::string line = to_json(event).dump();
  EXPECT_LT(line.size(), 4096u);  // PIPE_BUF
  EXPECT_EQ(to_json(event)["route"].get<std::string>().size(), 64u);
}

}  // namespace
}  // namespace tnk::supervisor
