// dtrain-maskrcnn: Mask R-CNN from the command line. Each subcommand lives in
// its own file and registers itself on the app; this file only parses and
// dispatches, so adding one touches two lines here.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/maskrcnn/predict_command.h"
#include "apps/maskrcnn/train_command.h"

int main(int argc, char** argv) {
  CLI::App app{"dtrain-maskrcnn: Mask R-CNN training and inference", "dtrain-maskrcnn"};
  app.require_subcommand(1);
  dtrain::maskrcnn::PredictCommand predict(app);
  dtrain::maskrcnn::TrainCommand train(app, dtrain::maskrcnn::TrainCommand::Mode::kTrain);
  dtrain::maskrcnn::TrainCommand eval(app, dtrain::maskrcnn::TrainCommand::Mode::kEval);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line naming the subcommand, as every dtrain program reports usage errors.
    std::string where = app.get_name();
    for (const CLI::App* sub : app.get_subcommands()) where += " " + sub->get_name();
    std::fprintf(stderr, "%s: %s\n", where.c_str(), e.what());
    return 2;
  }

  if (predict.subcommand()->parsed()) return predict.execute();
  if (train.subcommand()->parsed()) return train.execute();
  if (eval.subcommand()->parsed()) return eval.execute();
  return 2;
}
