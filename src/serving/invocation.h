#pragma once

// One call of POST /invocations as a model sees it, and its answer. Kept free
// of HTTP and of LibTorch so that models and their tests need neither.
#include <map>
#include <stdexcept>
#include <string>

namespace dtrain::serving {

struct InvocationRequest {
  // The media type alone, lower case, parameters dropped: "image/png" for
  // "Image/PNG; charset=binary". Empty when the client sent none.
  std::string content_type;
  std::string body;
  // Query parameters, then SageMaker's X-Amzn-SageMaker-Custom-Attributes
  // ("score_threshold=0.7,other=x"), which is how SageMaker passes per-request
  // options (it forwards no query string to the container).
  std::map<std::string, std::string> parameters;
};

struct InvocationResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// A request the model cannot serve, with the HTTP status that says whose
// fault it is: 400 bad body, 413 too large, 415 content type, 503 busy. The
// message is one line naming what is wrong; it becomes {"error": message}.
class InvocationError : public std::runtime_error {
 public:
  InvocationError(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// "image/png" from a Content-Type header value (see InvocationRequest).
std::string media_type(const std::string& header_value);

// Parses SageMaker's custom attributes "k1=v1,k2=v2" into `into` (entries
// without '=' are ignored: the header is free text that other tools use too).
void parse_custom_attributes(const std::string& header_value, std::map<std::string, std::string>& into);

// {"error": message} as the body of a failed request.
std::string error_body(const std::string& message);

// The number in parameter `name`, or `fallback` when absent. Throws
// InvocationError 400 naming the parameter when it is not a number in [low, high].
double number_parameter(const InvocationRequest& request, const std::string& name, double fallback, double low,
                        double high);

}  // namespace dtrain::serving
