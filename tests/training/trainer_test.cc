#include "training/trainer.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtrain::training {
namespace {

// Writes what it sees to a shared journal: "name:point:iteration".
class Recorder : public Hook {
 public:
  Recorder(std::string name, std::vector<std::string>& journal) : name_(std::move(name)), journal_(journal) {}
  void before_train(int64_t i) override { note("before_train", i); }
  void before_step(int64_t i) override { note("before_step", i); }
  void after_step(int64_t done) override { note("after_step", done); }
  void after_train(int64_t done) override { note("after_train", done); }

 private:
  void note(const char* point, int64_t i) { journal_.push_back(name_ + ":" + point + ":" + std::to_string(i)); }
  std::string name_;
  std::vector<std::string>& journal_;
};

TEST(Trainer, RunsEachStepBetweenTheHooksInTheOrderTheyWereAdded) {
  std::vector<std::string> journal;
  Trainer trainer([&](int64_t i) { journal.push_back("step:" + std::to_string(i)); });
  trainer.emplace<Recorder>("a", journal);
  trainer.emplace<Recorder>("b", journal);
  int64_t iteration = 3;
  trainer.train(iteration, 5);
  EXPECT_EQ(iteration, 5);
  const std::vector<std::string> expected = {
      "a:before_train:3", "b:before_train:3",                                                //
      "a:before_step:3",  "b:before_step:3",  "step:3", "a:after_step:4", "b:after_step:4",  //
      "a:before_step:4",  "b:before_step:4",  "step:4", "a:after_step:5", "b:after_step:5",  //
      "a:after_train:5",  "b:after_train:5"};
  EXPECT_EQ(journal, expected);
}

TEST(Trainer, NothingToDoStillOpensAndClosesTraining) {
  std::vector<std::string> journal;
  Trainer trainer([&](int64_t) { FAIL() << "no step expected"; });
  trainer.emplace<Recorder>("a", journal);
  int64_t iteration = 7;
  trainer.train(iteration, 7);
  EXPECT_EQ(journal, (std::vector<std::string>{"a:before_train:7", "a:after_train:7"}));
}

// An elastic job restores the counter and calls train() again: the loop resumes there.
TEST(Trainer, ACounterSetBackBetweenCallsIsWhereTheNextCallResumes) {
  std::vector<int64_t> steps;
  Trainer trainer([&](int64_t i) {
    steps.push_back(i);
    if (i == 3 && steps.size() == 4) throw std::runtime_error("a worker was lost");
  });
  int64_t iteration = 0;
  EXPECT_THROW(trainer.train(iteration, 6), std::runtime_error);
  EXPECT_EQ(iteration, 3);  // the failed step did not count
  iteration = 2;            // the last commit
  trainer.train(iteration, 6);
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 1, 2, 3, 2, 3, 4, 5}));
}

TEST(Trainer, AHookThatThrowsEndsTrainingWithoutAfterTrain) {
  std::vector<std::string> journal;
  class StopAtTwo : public Hook {
   public:
    void after_step(int64_t done) override {
      if (done == 2) throw std::runtime_error("diverged at iteration 2");
    }
  };
  Trainer trainer([](int64_t) {});
  trainer.emplace<StopAtTwo>();
  trainer.emplace<Recorder>("r", journal);
  int64_t iteration = 0;
  EXPECT_THROW(trainer.train(iteration, 5), std::runtime_error);
  EXPECT_EQ(iteration, 2);
  // The hook after the thrower saw the second step start but not end, and no after_train.
  EXPECT_EQ(journal.back(), "r:before_step:1");
}

TEST(Trainer, TrainWhileStepsUntilThePredicateFails) {
  std::vector<int64_t> steps;
  std::vector<std::string> journal;
  Trainer trainer([&](int64_t i) { steps.push_back(i); });
  trainer.emplace<Recorder>("r", journal);
  int64_t iteration = 10;
  int64_t budget = 3;  // e.g. batches left in an epoch
  trainer.train_while(iteration, [&](int64_t) { return budget-- > 0; });
  EXPECT_EQ(steps, (std::vector<int64_t>{10, 11, 12}));
  EXPECT_EQ(iteration, 13);
  EXPECT_EQ(journal.back(), "r:after_train:13");
}

TEST(Hook, PeriodEndsEveryPeriodAndNeverForZero) {
  EXPECT_TRUE(period_ends(6, 3));
  EXPECT_FALSE(period_ends(7, 3));
  EXPECT_FALSE(period_ends(6, 0));
}

}  // namespace
}  // namespace dtrain::training
